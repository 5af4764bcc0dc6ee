/**
 * The seam where a deploy attempt's secrets are taken out of server text (core/kubernetes/scrub.ts, issue 12): every
 * `ApiError` a `Cluster` call returns has its message scrubbed before any step, log, answer or audit record sees it,
 * and the logger scrubs what it is given as a second guard (kubelet text in pod conditions is server text too).
 */
import type { JsonObject, JsonValue } from "../core/crypto/canonical.js";
import type { ApiError } from "../core/kubernetes/api-status.js";
import type { Scrubber } from "../core/kubernetes/scrub.js";
import type { K8sAudit } from "./audit.js";
import type { Cluster } from "./cluster.js";
import type { Logger } from "../kit/log.js";

function scrubError(error: ApiError, scrub: Scrubber): ApiError {
  return error.kind === "status"
    ? { ...error, message: scrub(error.message), reason: scrub(error.reason) }
    : { ...error, message: scrub(error.message) };
}

/** `r` with its `error` scrubbed, for every outcome type of the seam (they all carry `{kind:"error", error}`). */
function scrubOutcome<T extends { readonly kind: string }>(r: T, scrub: Scrubber): T {
  if (r.kind !== "error" || !("error" in r)) return r;
  return { ...r, error: scrubError((r as T & { error: ApiError }).error, scrub) };
}

export function scrubbingCluster(inner: Cluster, scrub: Scrubber): Cluster {
  const s = <T extends { readonly kind: string }>(p: Promise<T>): Promise<T> => p.then((r) => scrubOutcome(r, scrub));
  return {
    get requestCount() {
      return inner.requestCount;
    },
    identity: inner.identity,
    getNamespace: (ns, o) => s(inner.getNamespace(ns, o)),
    createNamespace: (m, o) => s(inner.createNamespace(m, o)),
    getPod: (ns, name, o) => s(inner.getPod(ns, name, o)),
    listPods: (ns, selector, o) => s(inner.listPods(ns, selector, o)),
    createPod: (ns, m, o) => s(inner.createPod(ns, m, o)),
    deletePod: (ns, name, fence, authority, o) => s(inner.deletePod(ns, name, fence, authority, o)),
    getSecret: (ns, name, o) => s(inner.getSecret(ns, name, o)),
    listSecrets: (ns, selector, o) => s(inner.listSecrets(ns, selector, o)),
    createSecret: (ns, m, o) => s(inner.createSecret(ns, m, o)),
    deleteSecret: (ns, name, pre, o) => s(inner.deleteSecret(ns, name, pre, o)),
    getClaim: (ns, name, o) => s(inner.getClaim(ns, name, o)),
    createClaim: (ns, m, o) => s(inner.createClaim(ns, m, o)),
    watchPod: (ns, name, from, handlers) => inner.watchPod(ns, name, from, handlers),
    readLog: (ns, name, opts) =>
      s(inner.readLog(ns, name, { ...opts, onChunk: (chunk) => opts.onChunk(scrub(chunk)) })),
    close: () => inner.close(),
  };
}

/** Every string of a payload, keys included, at any depth. */
function scrubJson(value: JsonValue, scrub: Scrubber): JsonValue {
  if (typeof value === "string") return scrub(value);
  if (Array.isArray(value)) return value.map((v) => scrubJson(v, scrub));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [scrub(k), scrubJson(v as JsonValue, scrub)]));
  return value;
}

/**
 * Issue 33 item 13: the chain is scrubbed too, whatever field a secret was put in. A caller may paste the nsec into
 * the namespace (a 63-character lowercase label is a valid one): the answer was scrubbed, but the signed records of
 * the attempt carried it verbatim. Every record this deploy writes (intent, result, outcome, drafted events) passes
 * through the request's own scrubber, every field of it.
 */
export function scrubbingAudit(inner: K8sAudit, scrub: Scrubber): K8sAudit {
  const payload = (p: JsonObject) => scrubJson(p, scrub) as JsonObject;
  return {
    chain: inner.chain,
    intent: (kind, p) => inner.intent(kind, payload(p)),
    result: (actionId, kind, p) => inner.result(actionId, kind, payload(p)),
    record: (kind, p) => inner.record(kind, payload(p)),
    append: (draft) => inner.append({ ...draft, payload: payload(draft.payload) }),
    close: () => inner.close(),
  };
}

export function scrubbingLogger(inner: Logger, scrub: Scrubber): Logger {
  const fields = (f?: Record<string, unknown>) =>
    f === undefined
      ? undefined
      : Object.fromEntries(Object.entries(f).map(([k, v]) => [k, typeof v === "string" ? scrub(v) : v]));
  return {
    info: (msg, f) => inner.info(scrub(msg), fields(f)),
    warn: (msg, f) => inner.warn(scrub(msg), fields(f)),
    error: (msg, f) => inner.error(scrub(msg), fields(f)),
    flush: () => inner.flush(),
  };
}
