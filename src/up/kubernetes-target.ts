/**
 * `berth up`'s second target: when the user has a Kubernetes context configured (KUBECONFIG or ~/.kube/config with a
 * current context, or one named with --kube-context), `up` shows it beside the local mesh — which context, which
 * server, whether it answers, and how many berth agent pods it holds. It only looks: nothing is created on a cluster
 * the user did not ask berth to use.
 *
 * The probe runs `berth k8s list` as a child process, like every other step of `up`, so what it shows is what the user
 * gets by typing that command; a cluster that does not answer within the probe's time is reported, never waited on.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { err, ok, type Result } from "../kit/result.js";
import { runVerb } from "./run-verb.js";

export type KubernetesTarget =
  | { readonly configured: false; readonly reason: string }
  | {
      readonly configured: true;
      readonly context: string;
      readonly server: string | null;
      readonly reachable: boolean;
      readonly agents: number | null;
      readonly error: string | null;
    };

/** The slice of a kubeconfig `up` reads to name the context; client-node does the real loading inside `berth k8s`. */
const KubeconfigSlice = z.object({
  "current-context": z.string().optional(),
  contexts: z
    .array(z.object({ name: z.string(), context: z.object({ cluster: z.string() }).passthrough() }))
    .default([]),
  clusters: z
    .array(z.object({ name: z.string(), cluster: z.object({ server: z.string() }).passthrough() }))
    .default([]),
});

function kubeconfigFiles(env: NodeJS.ProcessEnv): string[] {
  if (env.KUBECONFIG) return env.KUBECONFIG.split(delimiter).filter((p) => p !== "" && existsSync(p));
  const fallback = join(env.HOME ?? homedir(), ".kube", "config");
  return existsSync(fallback) ? [fallback] : [];
}

/** Which context `up` would show, and its server, or why there is none. Pure apart from reading the kubeconfig files. */
export function configuredContext(
  requested: string | null,
  env: NodeJS.ProcessEnv = process.env,
): Result<{ context: string; server: string | null }> {
  const files = kubeconfigFiles(env);
  if (files.length === 0) return err("no kubeconfig (set KUBECONFIG or create ~/.kube/config)");
  let current: string | undefined;
  const servers = new Map<string, string>();
  const clusters = new Map<string, string>();
  for (const file of files) {
    let doc: z.infer<typeof KubeconfigSlice>;
    try {
      doc = KubeconfigSlice.parse(parseYaml(readFileSync(file, "utf8"), { logLevel: "error" }) ?? {});
    } catch (error) {
      return err(
        `${file} is not a readable kubeconfig: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
      );
    }
    // kubectl's merge rule: the first file to set a value wins.
    current ??= doc["current-context"];
    for (const c of doc.clusters) if (!servers.has(c.name)) servers.set(c.name, c.cluster.server);
    for (const c of doc.contexts) if (!clusters.has(c.name)) clusters.set(c.name, c.context.cluster);
  }
  const context = requested ?? current;
  if (!context) return err("the kubeconfig has no current context (pass --kube-context NAME)");
  if (!clusters.has(context)) return err(`context ${JSON.stringify(context)} is not in the kubeconfig`);
  return ok({ context, server: servers.get(clusters.get(context) as string) ?? null });
}

const ListAnswer = z.array(z.object({ name: z.string() }).passthrough());

/** Looks at the configured cluster through `berth k8s list`; at most `timeoutMs`. */
export async function probeKubernetesTarget(
  berthMain: string,
  home: string,
  requested: string | null,
  timeoutMs = 10_000,
): Promise<KubernetesTarget> {
  const configured = configuredContext(requested);
  if (!configured.ok) return { configured: false, reason: configured.error };
  const found = configured.value;
  const base = { configured: true as const, context: found.context, server: found.server };
  const listed = await runVerb(
    berthMain,
    home,
    ["k8s", "list", "--all-namespaces", "--context", found.context, "--json"],
    timeoutMs,
  );
  if (listed.code === null)
    return { ...base, reachable: false, agents: null, error: `no answer within ${Math.round(timeoutMs / 1000)} s` };
  if (listed.code !== 0) {
    const why = (listed.stderr || listed.stdout).trim().split("\n").slice(-1)[0] ?? "";
    return { ...base, reachable: false, agents: null, error: why };
  }
  try {
    return { ...base, reachable: true, agents: ListAnswer.parse(JSON.parse(listed.stdout)).length, error: null };
  } catch {
    return { ...base, reachable: true, agents: null, error: "berth k8s list printed an unexpected document" };
  }
}

/** One line for the `up` summary. */
export function describeKubernetesTarget(t: KubernetesTarget): string {
  if (!t.configured) return `kubernetes  not configured: ${t.reason}`;
  const where = `context ${t.context}${t.server ? ` (${t.server})` : ""}`;
  if (!t.reachable) return `kubernetes  ${where}: unavailable — ${t.error}`;
  return `kubernetes  ${where}: ${t.agents === null ? "reachable" : `${t.agents} agent pod${t.agents === 1 ? "" : "s"}`}`;
}
