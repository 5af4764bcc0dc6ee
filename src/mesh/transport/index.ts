/** Transport: framing, the stream/connector seam, TCP and in-memory connectors. */
export * from "./frames.js";
export * from "./memory.js";
export * from "./tcp.js";
