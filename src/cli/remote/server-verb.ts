/**
 * For the verbs outside backends/'s controller verbs (audit, doctor, backup, node rehome, k8s): which `berth serve`
 * this invocation talks to, if any — decided as for every verb (target.ts) — and one API call whose failure is the
 * CliError the local verb would have thrown (backends/remote.ts `failed`). A verb asks `serverFor` first and runs on the
 * files only when it answers null.
 */
import { CliError } from "../errors.js";
import { apiRequest, failed } from "../backends/remote.js";
import type { ApiAnswer, ServerTarget } from "./http.js";
import { resolveController, type TargetFlags } from "./target.js";

export interface ServerChoice {
  readonly server: ServerTarget;
  /** The server runs on this machine (found through the home's serve.json): paths mean the same to both. */
  readonly sameHost: boolean;
}

export async function serverFor(flags: TargetFlags): Promise<ServerChoice | null> {
  const t = await resolveController(flags);
  return t.kind === "server" ? { server: t.server, sameHost: t.sameHost } : null;
}

/** One request; a 2xx answer's body, or the CliError the local verb would throw for the same failure. */
export async function callServer(
  t: ServerTarget,
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown,
  subject: { agent?: string } = {},
): Promise<unknown> {
  const a = await apiRequest(t, method, path, body);
  if (a.status >= 200 && a.status < 300) return a.body;
  throw failed(t, a, subject);
}

/** The whole answer, for a verb whose refusals carry their own document (a rehome, a Kubernetes deploy). */
export const askServer = (
  t: ServerTarget,
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown,
): Promise<ApiAnswer> => apiRequest(t, method, path, body);

export { failed };

/**
 * A verb that must not run through a server: said plainly, before anything is done (exit 2: the request cannot be
 * made this way), with how to do it instead.
 */
export function localOnly(verb: string, why: string, server: ServerTarget): CliError {
  return new CliError(
    `${verb} does not go through a server (${why}); this invocation would talk to ${server.url} (${server.via}). Run it on the controller host with --local`,
    2,
    { kind: "usage" },
  );
}
