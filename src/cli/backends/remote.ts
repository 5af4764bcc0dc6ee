/**
 * The controller verbs through a `berth serve` (src/server/contract.ts has the routes): the same documents the local
 * files give (types.ts), and the API's errors turned back into the CliError kinds and exit statuses the local verbs
 * use — 400 a request that could not be made (2), 401 a token the server refused (2), 404 an unknown agent or
 * instance (1), 409/422 a refusal (1), 502 a node or cluster that did not answer (1).
 */
import { dirname, isAbsolute, resolve } from "node:path";
import type { AgentState, HistoryAnswer, LogsAnswer } from "../../agents/index.js";
import type { DeployPlan } from "../../core/agents/deploy-plan.js";
import { validateAgentSpecText } from "../../core/agents/spec.js";
import { err, ok } from "../../kit/result.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { PlaceReport, SettleReport, UnsettledDecision, VerbResult } from "../../mesh/controller/index.js";
import type { MovedRecord } from "../../mesh/controller/move-records.js";
import { CliError, invalidInput, placeRefused, unknownAgent } from "../errors.js";
import { type ApiAnswer, type ServerTarget, apiRequest as sendOnce } from "../remote/http.js";
import type { ControllerBackend, DeployDocument, InstanceRow, SpecInput, StopDocument, TargetRow } from "./types.js";
import { agentFailureError, nodeAdminError, sentFailure } from "./failures.js";

/**
 * Issue 20: several `berth serve` may share one store and only the leader writes; a follower answers a write 503
 * `not_leader` with the leader's URL, having done nothing. The CLI sends the same request there, once, with the same
 * token and trust (the servers of one store share its home's token).
 */
export async function apiRequest(
  t: ServerTarget,
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  // Issue 37: while nobody leads (a failover in progress) a follower answers 503 `not_leader` with no leader, nothing
  // done, and Retry-After: the CLI waits as told and asks again, for up to NO_LEADER_WAIT_MS, rather than fail a verb
  // that a failover of a few seconds would have served.
  const deadline = Date.now() + NO_LEADER_WAIT_MS;
  let a = await sendOnce(t, method, path, body);
  while (
    a.status === 503 &&
    isErrorBody(a.body) &&
    a.body.error.code === "not_leader" &&
    (a.body as { leader?: unknown }).leader === null &&
    a.retryAfterS !== undefined
  ) {
    const wait = Math.max(250, a.retryAfterS * 1000);
    if (Date.now() + wait > deadline) break;
    await new Promise((r) => setTimeout(r, wait));
    a = await sendOnce(t, method, path, body);
  }
  const leader = (a.body as { leader?: { url?: unknown } | null } | null)?.leader?.url;
  if (
    a.status !== 503 ||
    !isErrorBody(a.body) ||
    a.body.error.code !== "not_leader" ||
    typeof leader !== "string" ||
    !/^https?:\/\/[^\s/]+$/.test(leader) ||
    leader === t.url
  )
    return a;
  return sendOnce({ ...t, url: leader, via: `${t.via}, whose leader is ${leader}` }, method, path, body);
}

/** Issue 37: how long a verb waits for a store without a leader to elect one (a few failover bounds). */
export const NO_LEADER_WAIT_MS = 15_000;

export interface ApiErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly constraints?: ReadonlyArray<{ constraint: string; detail: string }>;
  };
}

export const isErrorBody = (b: unknown): b is ApiErrorBody =>
  typeof b === "object" && b !== null && typeof (b as ApiErrorBody).error?.code === "string";
const isVerbResult = (b: unknown): b is VerbResult =>
  typeof b === "object" &&
  b !== null &&
  typeof (b as VerbResult).kind === "string" &&
  typeof (b as VerbResult).instance_id === "string";

/** What the API said, as the CLI says it. `subject` names the agent the route was about, for a 404. */
export function failed(t: ServerTarget, a: ApiAnswer, subject: { agent?: string } = {}): CliError {
  const e = isErrorBody(a.body)
    ? a.body.error
    : { code: `http_${a.status}`, message: typeof a.body === "string" ? a.body.slice(0, 300) : `HTTP ${a.status}` };
  // Issue 36: an agent verb's failure comes back as src/agents gave it, and is worded as the local files word it.
  const failure = sentFailure((e as { failure?: unknown }).failure);
  if (failure !== null && a.status !== 401) return agentFailureError(failure);
  switch (a.status) {
    case 400:
      return invalidInput(e.message);
    case 401:
      return new CliError(
        `the server at ${t.url} refused the API token (${e.message}; ${t.via}); check the token file holds the server's current api.token`,
        2,
        { kind: "unauthorized" },
      );
    case 404:
      if (subject.agent !== undefined && e.code === "not_found") return unknownAgent(subject.agent);
      return new CliError(e.message, 1, { kind: "refused" });
    case 409:
    case 422:
      return new CliError(e.message, 1, { kind: "refused", details: { code: e.code } });
    case 502:
      return new CliError(e.message, 1, { kind: "unreachable", details: { code: e.code } });
    case 503:
      // A follower with no leader to send to (or a leader that moved again): nothing was done; try again.
      return new CliError(e.message, 1, { kind: "unreachable", details: { code: e.code } });
    case 413:
    case 415:
      return new CliError(e.message, 2, { kind: "usage" });
    default:
      return new CliError(`the server at ${t.url} answered ${a.status} (${e.code}): ${e.message}`, 2, {
        kind: "internal",
      });
  }
}

/** Paths in the spec mean paths on this machine; a server on this machine reads them as given (absolute). */
function specBody(spec: SpecInput, sameHost: boolean): Record<string, unknown> {
  // Issue 36: checked here with the parser the local files use, so a bad spec is refused in the same words and with
  // the same exit status whichever way the CLI goes (the server checks it again, and says it the same way).
  const checked = validateAgentSpecText(spec.text, spec.path);
  if (!checked.ok) throw agentFailureError({ kind: "spec_invalid", message: checked.error.join("\n") });
  const doc = checked.value;
  if (!sameHost) return doc as Record<string, unknown>;
  const absolute = (p: unknown) => (typeof p === "string" && !isAbsolute(p) ? resolve(dirname(spec.path), p) : p);
  const s = (doc as { spec?: Record<string, unknown> }).spec;
  if (s && typeof s === "object") {
    if ("package" in s) s.package = absolute(s.package);
    const k = s.kubernetes as Record<string, unknown> | undefined;
    if (k && typeof k === "object" && "nsec_file" in k) k.nsec_file = absolute(k.nsec_file);
    // Issue 17: a secret env value's file, as the package (the server reads it; the value never crosses the API).
    const env = (s.config as { env?: Record<string, unknown> } | undefined)?.env;
    for (const value of env && typeof env === "object" ? Object.values(env) : []) {
      const from = (value as { valueFrom?: Record<string, unknown> } | null)?.valueFrom;
      if (from && typeof from === "object" && "file" in from) from.file = absolute(from.file);
    }
  }
  return doc as Record<string, unknown>;
}

export function apiBackend(t: ServerTarget, o: { readonly sameHost: boolean }): ControllerBackend {
  const call = async (
    method: "GET" | "POST" | "PUT",
    path: string,
    body?: unknown,
    subject: { agent?: string } = {},
  ): Promise<unknown> => {
    const a = await apiRequest(t, method, path, body);
    if (a.status >= 200 && a.status < 300) return a.body;
    throw failed(t, a, subject);
  };
  const agentPath = (name: string, tail = "") => `/agents/${encodeURIComponent(name)}${tail}`;
  const absolutePackage = (p: string) => (o.sameHost && !/^[0-9a-f]{64}$/.test(p) ? resolve(p) : p);
  return {
    where: t.via,
    targets: async (refresh, selector) => {
      const query = new URLSearchParams({
        ...(refresh ? { refresh: "true" } : {}),
        ...(selector ? { labelSelector: selector } : {}),
      }).toString();
      return ((await call("GET", `/nodes${query ? `?${query}` : ""}`)) as { nodes: TargetRow[] }).nodes;
    },
    addTarget: async (addr, tier, key) => {
      const a = await apiRequest(t, "POST", "/nodes", { addr, ...(tier ? { tier } : {}), ...(key ? { key } : {}) });
      if (a.status === 201) return ok((a.body as { node: TargetRow }).node);
      if (a.status === 422 && isErrorBody(a.body)) return err(a.body.error.message);
      throw failed(t, a);
    },
    setTier: async (ref, tier) => {
      const a = await apiRequest(t, "PUT", `/nodes/${encodeURIComponent(ref)}/tier`, { tier });
      if (a.status === 404) return false;
      if (a.status !== 200) throw failed(t, a);
      return true;
    },
    place: async (order) => {
      const { dry_run, ...rest } = order;
      const a = await apiRequest(t, "POST", dry_run ? "/placements/explain" : "/placements", {
        ...rest,
        package: absolutePackage(rest.package),
      });
      if (a.status === 200 || a.status === 201) return a.body as PlaceReport;
      if (isErrorBody(a.body) && a.body.error.code !== "invalid_request" && [400, 409, 422].includes(a.status))
        throw placeRefused(a.body.error.code, a.body.error.message, a.body.error.constraints ?? []);
      throw failed(t, a);
    },
    instances: async (_refresh, selector) => ({
      placements: (
        (await call("GET", selector ? `/instances?labelSelector=${encodeURIComponent(selector)}` : "/instances")) as {
          instances: InstanceRow[];
        }
      ).instances,
      moved: ((await call("GET", "/moved")) as { moved: MovedRecord[] }).moved,
    }),
    instance: async (verb, id, opts) => {
      const path = `/instances/${encodeURIComponent(id)}`;
      const a =
        verb === "status"
          ? await apiRequest(t, "GET", path)
          : verb === "logs"
            ? await apiRequest(t, "GET", `${path}/logs?tail_bytes=${opts.tail_bytes}`)
            : await apiRequest(
                t,
                "POST",
                `${path}/${verb}`,
                verb === "stop" ? { grace_ms: opts.grace_ms } : verb === "unload" && opts.purge ? { purge: true } : {},
              );
      if (isVerbResult(a.body)) return a.body;
      // The controller's own words for an instance nobody holds (mesh/controller/verbs.ts).
      if (a.status === 404)
        return {
          kind: "error",
          verb,
          instance_id: id,
          code: "unknown_instance",
          reason: `no placed instance ${id}, and no known node lists it`,
        };
      throw failed(t, a);
    },
    unsettled: async (settle) => {
      if (settle)
        return (await call("POST", "/unsettled/settle", {})) as {
          settled: SettleReport;
          unsettled: UnsettledDecision[];
        };
      return {
        settled: null,
        unsettled: ((await call("GET", "/unsettled")) as { unsettled: UnsettledDecision[] }).unsettled,
      };
    },
    agents: async (_refresh, selector) =>
      (
        (await call("GET", selector ? `/agents?labelSelector=${encodeURIComponent(selector)}` : "/agents")) as {
          agents: AgentState[];
        }
      ).agents,
    deploy: async (spec) =>
      (await call(
        "POST",
        `/agents?source=${encodeURIComponent(spec.path)}`,
        specBody(spec, o.sameHost),
      )) as DeployDocument,
    planDeploy: async (spec) =>
      (await call(
        "POST",
        `/agents?dryRun=true&source=${encodeURIComponent(spec.path)}`,
        specBody(spec, o.sameHost),
      )) as DeployPlan,
    agentStatus: async (name) => (await call("GET", agentPath(name), undefined, { agent: name })) as AgentState,
    agentLogs: async (name, tailBytes) =>
      (await call("GET", agentPath(name, `/logs?tail_bytes=${tailBytes}`), undefined, { agent: name })) as LogsAnswer,
    agentStop: async (name, wait) => {
      const a = await apiRequest(t, "POST", agentPath(name, "/stop"), wait ? { wait: true } : {});
      // A stop Kubernetes did not finish is answered 422 with the stop document itself (routes/agents.ts).
      if (a.status === 200 || (a.status === 422 && typeof a.body === "object" && a.body !== null && "ok" in a.body))
        return a.body as StopDocument;
      throw failed(t, a, { agent: name });
    },
    agentPurge: async (name) => (await call("POST", agentPath(name, "/purge"), {}, { agent: name })) as StopDocument,
    nodeAdmin: async (verb, ref, reason) => {
      const { operatorIdentity } = await import("../controller.js");
      const a = await apiRequest(t, "POST", `/nodes/${encodeURIComponent(ref)}/${verb}`, {
        reason,
        operator: operatorIdentity(verb === "remove" ? "berth nodes remove" : `berth node ${verb}`),
      });
      if (a.status >= 200 && a.status < 300) return a.body as JsonObject;
      const sent = isErrorBody(a.body)
        ? (a.body.error as { failure?: { kind?: unknown; message?: unknown } }).failure
        : undefined;
      if (sent?.kind === "node_admin" && typeof sent.message === "string") throw nodeAdminError(sent.message);
      throw failed(t, a);
    },
    agentHistory: async (name) =>
      (await call("GET", agentPath(name, "/history"), undefined, { agent: name })) as HistoryAnswer,
    agentRollback: async (name, revision) =>
      (await call("POST", agentPath(name, "/rollback"), revision === undefined ? {} : { revision }, {
        agent: name,
      })) as DeployDocument,
    agentStart: async (name) => (await call("POST", agentPath(name, "/start"), {}, { agent: name })) as DeployDocument,
    agentDelete: async (name) => {
      const { operatorIdentity } = await import("../controller.js");
      return (await call(
        "POST",
        agentPath(name, "/delete"),
        { operator: operatorIdentity("berth agent delete") },
        { agent: name },
      )) as { ok: boolean; agent: string; message: string };
    },
    agentReplace: async (name, spec) =>
      (await call(
        "POST",
        agentPath(name, spec === undefined ? "/replace" : `/replace?source=${encodeURIComponent(spec.path)}`),
        spec === undefined ? {} : { spec: specBody(spec, o.sameHost) },
        { agent: name },
      )) as DeployDocument,
  };
}
