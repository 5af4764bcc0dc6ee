/**
 * Connecting to the cluster (spec/kubernetes.md §8.1): load kubeconfig the standard way, select the configured context,
 * and resolve credentials eagerly — running an exec plugin once — so auth failures surface as F-rows here instead
 * of as an H-row halfway through a deploy. Credentials never come from `provider_config`.
 */
import type { Result } from "../kit/result.js";
import { accessSync, constants, statSync } from "node:fs";
import type https from "node:https";
import { homedir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { catalogue } from "../core/kubernetes/catalogue.js";
import { ClusterLease, pooled, remember } from "./cluster-pool.js";
import { HttpCluster } from "./http-cluster.js";

export type Connection = Result<ClusterLease>;

/**
 * Which pooled connection a `connect()` may reuse (cluster-pool.ts): the kubeconfig files as the client library would
 * find them, each with its modification time, and the context asked for.
 */
export function poolKey(context: string | null, env: NodeJS.ProcessEnv): string {
  const files = (env.KUBECONFIG ?? "").split(delimiter).filter((f) => f !== "");
  const candidates = files.length > 0 ? files : [join(env.HOME ?? homedir(), ".kube", "config")];
  const stamped = candidates.map((f) => {
    try {
      const st = statSync(f);
      return `${f}@${st.mtimeMs}:${st.size}`;
    } catch {
      return `${f}@absent`;
    }
  });
  return JSON.stringify([stamped, context]);
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** §8.1 step 3: an absolute path that is not a file, or a bare name in no PATH directory. */
export function pluginMissing(command: string, path: string | undefined): boolean {
  if (isAbsolute(command)) return !isExecutableFile(command);
  if (command.includes("/")) return false; // relative to the kubeconfig; let client-node resolve it
  return !(path ?? "").split(delimiter).some((dir) => dir !== "" && isExecutableFile(join(dir, command)));
}

export const CLIENT_MISSING =
  "the Kubernetes client is not installed (@kubernetes/client-node is an optional dependency of berth: install it beside berth to use Kubernetes)";

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * A lease on this process's connection to the cluster `context` names (cluster-pool.ts), made on first use: the
 * kubeconfig loaded, the context selected and credentials resolved once, their failures answered as F-rows.
 */
export async function connect(context: string | null, env: NodeJS.ProcessEnv = process.env): Promise<Connection> {
  const key = poolKey(context, env);
  const shared = pooled(key);
  if (shared) return { ok: true, value: new ClusterLease(shared) };
  // Concurrent first calls share one connection attempt instead of each opening (and handshaking) its own.
  let opening = connecting.get(key);
  if (!opening) {
    opening = connectFresh(context, env)
      .then((fresh) => {
        if (fresh.ok) remember(key, fresh.value);
        return fresh;
      })
      .finally(() => connecting.delete(key));
    connecting.set(key, opening);
  }
  const fresh = await opening;
  return fresh.ok ? { ok: true, value: new ClusterLease(fresh.value) } : fresh;
}

const connecting = new Map<string, Promise<Result<HttpCluster>>>();

/** A connection of its own, never pooled (the provider process, which makes one call and exits, uses `connect`). */
const exists = (path: string): boolean => {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
};

export async function connectFresh(
  context: string | null,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Result<HttpCluster>> {
  const ctxLabel = context ?? "(current)";
  // Loaded on demand so that `info`, every refusal before stage 11 and the node daemon never pay for the Kubernetes
  // client; it is an optional dependency (issue 13), so its absence is an answer, not a crash.
  let KubeConfig: typeof import("@kubernetes/client-node").KubeConfig;
  try {
    ({ KubeConfig } = await import("@kubernetes/client-node"));
  } catch (error) {
    return { ok: false, error: catalogue.F1(ctxLabel, `${CLIENT_MISSING} (${message(error)})`) };
  }
  // Issue 36 item 5: with no kubeconfig at all the client falls back to http://localhost:8080 and fails on TLS
  // settings ("HTTP protocol is not allowed…"); say that there is no kubeconfig instead.
  const files = env.KUBECONFIG
    ? env.KUBECONFIG.split(delimiter).filter((p) => p !== "" && exists(p))
    : [join(env.HOME ?? homedir(), ".kube", "config")].filter(exists);
  if (files.length === 0 && !env.KUBERNETES_SERVICE_HOST) {
    const looked = env.KUBECONFIG
      ? `KUBECONFIG names ${env.KUBECONFIG}, which does not exist`
      : `KUBECONFIG is not set and ${join(env.HOME ?? homedir(), ".kube", "config")} does not exist`;
    return {
      ok: false,
      error: catalogue.F1(
        ctxLabel,
        `no kubeconfig: ${looked}; point KUBECONFIG at the cluster's kubeconfig (or create ~/.kube/config)`,
      ),
    };
  }
  const kc = new KubeConfig();
  try {
    kc.loadFromDefault();
    if (context !== null) {
      if (!kc.getContextObject(context))
        return {
          ok: false,
          error: catalogue.F1(ctxLabel, `context ${JSON.stringify(context)} is not in the kubeconfig`),
        };
      kc.setCurrentContext(context);
    }
    if (!kc.getCurrentCluster())
      return { ok: false, error: catalogue.F1(ctxLabel, "the kubeconfig names no cluster for this context") };
  } catch (error) {
    return { ok: false, error: catalogue.F1(ctxLabel, message(error)) };
  }
  const user = kc.getCurrentUser();
  const execCommand = user?.exec?.command;
  if (typeof execCommand === "string" && pluginMissing(execCommand, env.PATH))
    return { ok: false, error: catalogue.F2(ctxLabel, execCommand) };
  const tls: https.RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(tls);
  } catch (error) {
    return { ok: false, error: catalogue.F3(ctxLabel, message(error)) };
  }
  try {
    const server = kc.getCurrentCluster()?.server ?? "";
    const agentOptions: https.AgentOptions = {
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls.key !== undefined ? { key: tls.key } : {}),
      ...(tls.pfx !== undefined ? { pfx: tls.pfx } : {}),
      ...(tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
      ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
      ...(kc.getCurrentCluster()?.skipTLSVerify ? { rejectUnauthorized: false } : {}),
      ...(kc.getCurrentCluster()?.tlsServerName ? { servername: kc.getCurrentCluster()?.tlsServerName } : {}),
    };
    return {
      ok: true,
      value: new HttpCluster(kc, agentOptions, { context: kc.getCurrentContext(), server: new URL(server).host }),
    };
  } catch (error) {
    return { ok: false, error: catalogue.F3(ctxLabel, message(error)) };
  }
}
