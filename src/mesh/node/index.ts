/** The node side of the mesh: daemon, host service, process runtime, content store, facts, configuration. */
export * from "./config.js";
export * from "./daemon.js";
export * from "./init.js";
export * from "./runtime.js";
export * from "./service.js";
export * from "./store.js";
