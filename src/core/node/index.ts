/** The node's pure decisions: admission, route choice, revocation matching (the shell is src/mesh/node). */
export * from "./admission.js";
export * from "./revocation.js";
export * from "./route.js";
export * from "./process-group.js";
export * from "./health-check.js";
export * from "./restart-policy.js";
