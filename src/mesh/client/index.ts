/** The controller's client for node daemons: the connector (TLS, plaintext by opt-in), signed calls, answer binding, package fetch serving. */
export * from "./connector.js";
export * from "./node-client.js";
export * from "./package-source.js";
