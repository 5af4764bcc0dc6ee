/**
 * The typed client for berth's HTTP API (`/api/v1`). Every call sends the bearer token in the header, never in a
 * URL; every failure becomes an `ApiError` carrying the server's own message (and, for a validation error, the
 * field it names), which the views show as they are.
 */
import type {
  AgentLogs,
  AgentState,
  AuditEvents,
  ChainInfo,
  DeployOutcome,
  InstanceInfo,
  KubernetesAgents,
  MovedInfo,
  NodeInfo,
  PackageInfo,
  PlacementRecord,
  PastDecision,
  PlaceOrder,
  PlaceReport,
  SettleOutcome,
  UnsettledDecision,
  VerbResult,
  VerifyResult,
} from "./types";

export const API_BASE = "/api/v1";

export interface FieldIssue {
  readonly path: string;
  readonly message: string;
}

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The fields a validation error names (`body.spec.package`), as the server gave them. */
    readonly issues: readonly FieldIssue[] = [],
  ) {
    super(message);
  }
}

interface ErrorBody {
  error?: { code?: string; message?: string; issues?: Array<{ path?: string; message?: string }> };
}

/** The server's message, with the fields a validation error names when the message does not already say them. */
function messageOf(status: number, body: ErrorBody | null, fallback: string): { code: string; message: string } {
  const e = body?.error;
  if (!e) return { code: `http_${status}`, message: `${status} ${fallback}`.trim() };
  let message = e.message ?? fallback;
  for (const issue of e.issues ?? []) {
    const line = `${issue.path ?? ""}: ${issue.message ?? ""}`;
    if (issue.path && !message.includes(issue.path)) message += `\n${line}`;
  }
  return { code: e.code ?? `http_${status}`, message };
}

export class BerthApi {
  constructor(private readonly token: string) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  async request<T>(method: "GET" | "POST" | "PUT", path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(API_BASE + path, {
        method,
        headers: this.headers(body === undefined ? {} : { "content-type": "application/json" }),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      throw new ApiError(
        0,
        "unreachable",
        `the berth server did not answer ${method} ${path}: ${(error as Error).message}`,
      );
    }
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // a non-JSON body (a proxy's error page) is reported by its status below
    }
    if (!response.ok) {
      const { code, message } = messageOf(response.status, parsed as ErrorBody | null, response.statusText);
      // A token from an earlier server (sessionStorage outlives a restart with a new data dir) is the usual cause.
      const hint =
        response.status === 401 ? "\nOpen the dashboard URL that berth printed (it carries the current token)." : "";
      const issues = ((parsed as ErrorBody | null)?.error?.issues ?? []).flatMap((i) =>
        i.path ? [{ path: i.path, message: i.message ?? "" }] : [],
      );
      throw new ApiError(response.status, code, message + hint, issues);
    }
    return parsed as T;
  }

  nodes(refresh = false) {
    return this.request<{ nodes: NodeInfo[] }>("GET", `/nodes${refresh ? "?refresh=true" : ""}`);
  }
  setTier(ref: string, tier: string) {
    return this.request<unknown>("PUT", `/nodes/${encodeURIComponent(ref)}/tier`, { tier });
  }
  packages() {
    return this.request<{ packages: PackageInfo[] }>("GET", "/packages");
  }
  placements() {
    return this.request<{ placements: PlacementRecord[] }>("GET", "/placements");
  }
  placement(decisionId: string) {
    return this.request<PastDecision>("GET", `/placements/${encodeURIComponent(decisionId)}`);
  }
  explain(order: PlaceOrder) {
    return this.request<PlaceReport>("POST", "/placements/explain", order);
  }
  place(order: PlaceOrder) {
    return this.request<PlaceReport>("POST", "/placements", order);
  }
  instances() {
    return this.request<{ instances: InstanceInfo[] }>("GET", "/instances");
  }
  moved() {
    return this.request<{ moved: MovedInfo[] }>("GET", "/moved");
  }
  instanceVerb(id: string, verb: "start" | "stop" | "unload") {
    return this.request<unknown>("POST", `/instances/${encodeURIComponent(id)}/${verb}`, {});
  }
  instanceLogs(id: string) {
    return this.request<VerbResult>("GET", `/instances/${encodeURIComponent(id)}/logs`);
  }
  unsettled() {
    return this.request<{ unsettled: UnsettledDecision[] }>("GET", "/unsettled");
  }
  settle() {
    return this.request<SettleOutcome>("POST", "/unsettled/settle", {});
  }
  agents() {
    return this.request<{ agents: AgentState[] }>("GET", "/agents");
  }
  agentLogs(name: string) {
    return this.request<AgentLogs>("GET", `/agents/${encodeURIComponent(name)}/logs`);
  }
  /** Deploys an agent spec (the JSON form of the YAML file `berth deploy` reads); a refusal names the field. */
  deploy(spec: Readonly<Record<string, unknown>>) {
    return this.request<DeployOutcome>("POST", "/agents", spec);
  }
  agentVerb(name: string, verb: "stop" | "start" | "replace") {
    return this.request<unknown>("POST", `/agents/${encodeURIComponent(name)}/${verb}`, {});
  }
  /** Issue 33: removes the agent's record once nothing of it runs (`ok: false` with the reason otherwise). */
  deleteAgent(name: string) {
    return this.request<{ ok: boolean; agent: string; message: string }>(
      "POST",
      `/agents/${encodeURIComponent(name)}/delete`,
      {},
    );
  }
  kubernetesAgents() {
    return this.request<KubernetesAgents>("GET", "/k8s/agents");
  }
  auditChains() {
    return this.request<{ chains: ChainInfo[] }>("GET", "/audit/chains");
  }
  /** Events with seq greater than `after`, oldest first. */
  auditEvents(chain: string, after: number, limit: number) {
    return this.request<AuditEvents>(
      "GET",
      `/audit/events?chain=${encodeURIComponent(chain)}&after=${after}&limit=${limit}`,
    );
  }
  verify(chain: string) {
    return this.request<VerifyResult>("GET", `/audit/verify?chain=${encodeURIComponent(chain)}`);
  }
}
