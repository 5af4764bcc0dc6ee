/** Transport: framing, the stream/connector seam, TCP and in-memory connectors, and the fault-injection wrapper (TLS: import tls.js; the controller's choice of the two: client/connector.ts). */
export * from "./faults.js";
export * from "./frames.js";
export * from "./memory.js";
export * from "./tcp.js";
