/** The controller's client for node daemons: signed calls, answer binding, package fetch serving. */
export * from "./node-client.js";
export * from "./package-source.js";
