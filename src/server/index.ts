/** The HTTP API, its event stream and the static dashboard (issue 8 §2). See README.md. */
export { buildApp, fastifyPath } from "./app.js";
export { ROUTES } from "./contract.js";
export type { RouteSpec } from "./route-spec.js";
export { API_BASE, openApiDocument, openApiText } from "./openapi.js";
export { DEFAULT_PORT, HANDLERS, isLoopback, type RunningServer, type ServerOptions, startServer } from "./server.js";
export { type KubernetesAccess, type ServerState, openServerState } from "./state.js";
export { loadOrCreateToken, TOKEN_FILE, tokenId } from "./token.js";
