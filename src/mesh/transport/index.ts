/** Transport: framing, the stream/connector seam, TCP and in-memory connectors, and the fault-injection wrapper. */
export * from "./faults.js";
export * from "./frames.js";
export * from "./memory.js";
export * from "./tcp.js";
