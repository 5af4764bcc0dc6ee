/** The signed control protocol shared by controller and node: shapes, signing, both sides' verification. */
export * from "./answer.js";
export * from "./bodies.js";
export * from "./messages.js";
export * from "./nonce-guard.js";
export * from "./results.js";
export * from "./sign.js";
export * from "./verify.js";
