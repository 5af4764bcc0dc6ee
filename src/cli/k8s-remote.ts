/**
 * `berth k8s deploy|status|list|logs|stop|replace` through a `berth serve` (routes/kubernetes.ts): the server runs the
 * same backend verbs on the cluster its own kubeconfig names, and chains them in its own home's k8s chain. The deploy
 * file is read and checked here (the same errors as on this machine), then sent as JSON; paths in it are read by the
 * server. An agent is named to the server by its 64-hex public key. `logs -f` polls the log's tail once a second.
 */
import { CliError } from "./errors.js";
import type { ServerTarget } from "./remote/http.js";
import { askServer, failed } from "./remote/server-verb.js";

export type DeployAnswer = { ok: boolean; agent_id?: string; error?: string };
export interface AgentAt {
  readonly pubkey: string;
  readonly podName: string;
  readonly namespace: string;
}

const agentPath = (a: AgentAt, tail = "") => `/k8s/agents/${a.pubkey}${tail}`;
const ns = (a: AgentAt) => `namespace=${encodeURIComponent(a.namespace)}`;

/** A cluster the server has not configured answers as an unconnectable cluster does on this machine. */
const notConfigured = (body: unknown): string | null => {
  const e = (body as { error?: { code?: string; message?: string } } | null)?.error;
  return e?.code === "k8s_not_configured" ? String(e.message) : null;
};

/** A deploy or replace: its own answer document on 200 and 422; a server without a cluster, the local verb's {ok:false}. */
async function deployLike(t: ServerTarget, path: string, doc: unknown): Promise<DeployAnswer> {
  const a = await askServer(t, "POST", path, doc);
  if ((a.status === 200 || a.status === 422) && typeof (a.body as DeployAnswer | null)?.ok === "boolean")
    return a.body as DeployAnswer;
  const unconfigured = notConfigured(a.body);
  if (unconfigured !== null) return { ok: false, error: `${unconfigured} (${t.via})` };
  throw failed(t, a);
}

export const deployThrough = (t: ServerTarget, doc: unknown) => deployLike(t, "/k8s/agents", doc);
export const replaceThrough = (t: ServerTarget, a: AgentAt, doc: unknown) =>
  deployLike(t, agentPath(a, "/replace"), doc);

async function readOnly(t: ServerTarget, path: string): Promise<unknown> {
  const a = await askServer(t, "GET", path);
  if (a.status === 200) return a.body;
  const unconfigured = notConfigured(a.body);
  if (unconfigured !== null) throw new CliError(`${unconfigured} (${t.via})`, 1);
  throw failed(t, a);
}

export const statusThrough = (t: ServerTarget, a: AgentAt) =>
  readOnly(t, `${agentPath(a)}?${ns(a)}`) as Promise<Record<string, unknown>>;

export async function listThrough(
  t: ServerTarget,
  namespace: string | null,
  selector?: string,
): Promise<Array<{ name: string; namespace: string; binding: string; startup: string; registry: string }>> {
  const query = new URLSearchParams({
    ...(namespace ? { namespace } : {}),
    ...(selector ? { labelSelector: selector } : {}),
  }).toString();
  const r = (await readOnly(t, `/k8s/agents${query ? `?${query}` : ""}`)) as {
    configured: boolean;
    error: string | null;
    agents: Array<{ name: string; namespace: string; binding: string; startup: string; registry: string }>;
  };
  if (!r.configured)
    throw new CliError(
      `the server at ${t.url} has no Kubernetes context configured (${t.via}); set KUBECONFIG for its berth serve`,
      1,
    );
  if (r.error !== null) throw new CliError(r.error, 1);
  return r.agents;
}

export async function logThrough(t: ServerTarget, a: AgentAt, tail: number | undefined): Promise<string> {
  const r = await askServer(t, "GET", `${agentPath(a, "/logs")}?${ns(a)}${tail === undefined ? "" : `&tail=${tail}`}`);
  if (r.status === 200) return (r.body as { log: string }).log;
  if (r.status === 404) throw new CliError(`${a.podName} does not exist; \`berth k8s list\` shows the agent pods`, 1);
  const unconfigured = notConfigured(r.body);
  if (unconfigured !== null) throw new CliError(`${unconfigured} (${t.via})`, 1);
  throw failed(t, r);
}

export async function stopThrough(
  t: ServerTarget,
  a: AgentAt,
  wait: boolean,
): Promise<{ ok: boolean; message: string }> {
  const r = await askServer(t, "POST", agentPath(a, "/stop"), { namespace: a.namespace, wait });
  if ((r.status === 200 || r.status === 422) && typeof (r.body as { ok?: unknown } | null)?.ok === "boolean")
    return r.body as { ok: boolean; message: string };
  const unconfigured = notConfigured(r.body);
  if (unconfigured !== null) throw new CliError(`${unconfigured} (${t.via})`, 1);
  throw failed(t, r);
}
