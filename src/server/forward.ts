/**
 * Issue 37 (F3): a follower forwards a write to the leader the store names now, and relays its answer. The caller's
 * own credentials go with it (the leader authenticates the caller again, so a follower lends no authority), marked as
 * forwarded (`x-berth-forwarded-by`) so it is never forwarded twice.
 *
 * What can happen, and what the caller is told:
 * - the leader answers: its answer, as it is, with `x-berth-leader` naming who did it;
 * - the request provably never reached a leader (the connection was refused, no route, its certificate not trusted
 *   by this server): nothing was done, so the follower's 503 `not_leader` (the CLI then tries the leader itself);
 * - the leader stopped answering mid-request (it died, or its lease lapsed on the store while this server waited: a
 *   frozen leader never answers, and a successor now leads): whether it was done is unknown, so 503 `leader_lost`,
 *   which says so and never invites a blind retry.
 *
 * Shell: one HTTP request, and the lease polled while it runs (`stillLeads`).
 */

/** Issue 37: the header a follower names a forwarded write's call id with; the leader records the call under it. */
const CALL_ID_HEADER = "x-berth-call-id";

/**
 * The call id a leader records a request under: the forwarding follower's (a forwarded request with a well-formed
 * id), else a fresh one. Pure but for the randomness passed in.
 */
export function callIdOf(headers: Readonly<Record<string, unknown>>, fresh: () => string): string {
  const named = headers[CALL_ID_HEADER];
  if (headers["x-berth-forwarded-by"] !== undefined && typeof named === "string" && /^[0-9a-f]{32}$/.test(named))
    return named;
  return fresh();
}

export type ForwardOutcome =
  | {
      readonly kind: "answered";
      readonly status: number;
      readonly contentType: string | null;
      readonly body: string;
      readonly retryAfter: string | null;
    }
  | { readonly kind: "not_sent"; readonly why: string }
  | { readonly kind: "lost"; readonly why: string };

export interface ForwardRequest {
  readonly leaderUrl: string;
  readonly method: string;
  /** The request target as the caller sent it (path and query). */
  readonly target: string;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: string | undefined;
  /** This server's URL, for the leader's log and the loop guard. */
  readonly via: string;
  /**
   * The call id the leader records the write under (its `api.call` events, `x-berth-call-id`): a write whose answer is
   * lost (`leader_lost`) is named by it, so the caller can look for it in the leader's chain before sending it again.
   */
  readonly callId: string;
  /** Whether the store still names that leader (same owner and epoch, renewed within its TTL). */
  readonly stillLeads: () => Promise<boolean>;
  /** How often `stillLeads` is asked while the leader has not answered. */
  readonly pollMs: number;
}

/**
 * Whether forwarding a caller's token to `leaderUrl` exposes it no more than the caller's own request did (issue 33
 * item 14's rule, the CLI's `plainHttpBeyondMachine`, on this hop): HTTPS, or plain HTTP that stays on this machine,
 * or plain HTTP from a server that is itself plain HTTP (the caller already sent its token in clear on this network).
 * Otherwise the follower names the leader and lets the caller decide. Pure.
 */
export function mayForwardToken(leaderUrl: string, servedOverTls: boolean): boolean {
  let u: URL;
  try {
    u = new URL(leaderUrl);
  } catch {
    return false;
  }
  if (u.protocol === "https:") return true;
  if (u.protocol !== "http:") return false;
  const host = u.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const loopback =
    host === "localhost" || host.endsWith(".localhost") || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
  return loopback || !servedOverTls;
}

/** Errors of a connection that never carried the request: nothing was done. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function causeCode(error: unknown): string | null {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === "string" ? cause.code : null;
}

export async function forwardWrite(r: ForwardRequest): Promise<ForwardOutcome> {
  const abort = new AbortController();
  let lapsed = false;
  let polling = false;
  const poll = setInterval(() => {
    if (polling) return;
    polling = true;
    r.stillLeads()
      .then((leads) => {
        if (!leads) {
          lapsed = true;
          abort.abort();
        }
      })
      .catch(() => undefined)
      .finally(() => {
        polling = false;
      });
  }, r.pollMs);
  poll.unref();
  try {
    const headers: Record<string, string> = { "x-berth-forwarded-by": r.via, [CALL_ID_HEADER]: r.callId };
    if (r.authorization !== undefined) headers.authorization = r.authorization;
    if (r.contentType !== undefined) headers["content-type"] = r.contentType;
    const answer = await fetch(new URL(r.target, r.leaderUrl), {
      method: r.method,
      headers,
      ...(r.body === undefined || r.body === "" ? {} : { body: r.body }),
      redirect: "manual",
      signal: abort.signal,
    });
    const body = await answer.text();
    return {
      kind: "answered",
      status: answer.status,
      contentType: answer.headers.get("content-type"),
      body,
      retryAfter: answer.headers.get("retry-after"),
    };
  } catch (error) {
    if (lapsed)
      return {
        kind: "lost",
        why: "its lease lapsed on the store while this server waited for its answer (it died or froze)",
      };
    const code = causeCode(error);
    if (code !== null && NOT_SENT.has(code)) return { kind: "not_sent", why: code };
    return { kind: "lost", why: code ?? (error as Error).message };
  } finally {
    clearInterval(poll);
  }
}
