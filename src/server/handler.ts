/** What a route handler is: parsed inputs in, an answer (or an `ApiError`) out. The shell around it is `app.ts`. */
import type { JsonObject } from "../core/crypto/canonical.js";
import type { Caller } from "./audit.js";
import type { ServerState } from "./state.js";

/** Inputs already parsed by the route's own schemas (`contract.ts`); each handler narrows them to those types. */
export interface Parsed {
  readonly params: unknown;
  readonly query: unknown;
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export interface Answer {
  readonly status?: number;
  readonly body: unknown;
  /** For a failure answered with its own document (a refused verb, a deploy that did not succeed): the code chained. */
  readonly error?: string;
  /** What the library chained for this call (decision_id, agent.deploy hash …), for the `api.call` outcome. */
  readonly refs?: JsonObject;
}

export interface CallContext {
  readonly state: ServerState;
  readonly caller: Caller;
  /**
   * Commits the call's `api.call` request now unless it already committed (a no-op on a read). A route whose request
   * rides its first write (`RouteSpec.recordRides`) calls it before any effect that is not a write on the controller
   * store; it throws when the record cannot be written, and then the handler must do nothing.
   */
  readonly commitRequest: () => Promise<void>;
}

export type Handler = (input: Parsed, ctx: CallContext) => Promise<Answer>;
export type Handlers = Readonly<Record<string, Handler>>;
