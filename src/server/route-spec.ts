/**
 * One route of the API as the contract declares it (contract.ts, contract-operator.ts): what the app validates and the
 * OpenAPI document describes. Its own file, so the route tables import it and not each other.
 */
import type { z } from "zod";

export interface RouteSpec {
  readonly id: string;
  readonly method: "GET" | "POST" | "PUT";
  /** OpenAPI form, with `{param}`. */
  readonly path: string;
  /**
   * The path's last `{param}` takes the rest of the path, slashes included, as the client spelled it (not decoded):
   * the tlog tiles (contract-tlog.ts), whose names span several segments.
   */
  readonly rest?: boolean;
  readonly summary: string;
  readonly tag: string;
  /** Public routes need no bearer token. */
  readonly public?: boolean;
  /** Mutating routes are chained as an `api.call` request/outcome pair. */
  readonly mutating?: boolean;
  /**
   * Issue 19: the `api.call` request rides the handler's first write transaction on the controller store instead of
   * committing alone before it (src/store/riding-engine.ts). Only for a handler whose every effect is such a write (a
   * request to a node is one: its stamp commits first), or that calls `commitRequest()` before any other.
   */
  readonly recordRides?: boolean;
  /** Issue 36: a mutating route whose call is a read for this (parsed) query — `POST /agents?dryRun=true` — is not chained. */
  readonly readOnlyWhen?: (query: unknown) => boolean;
  readonly params?: z.ZodObject;
  readonly query?: z.ZodObject;
  readonly body?: z.ZodType;
  readonly status: 200 | 201;
  readonly response: z.ZodType;
  /** Content type when not JSON. */
  readonly produces?: "text/event-stream" | "application/x-ndjson" | "text/plain" | "application/octet-stream";
  /** Error statuses this route can answer besides 400/401. */
  readonly errors?: readonly number[];
}
