/**
 * `startServer`: the controller as a service (issue 8 §2). Opens the server's state in the data directory, reads or
 * creates the API token, builds the app and listens — on loopback unless told otherwise. `berth serve`, `berth up`
 * and the benchmarks start it in-process; `close()` ends the event streams, stops listening and closes the controller.
 * Once listening it runs the loops of `src/serve` (issue 16): every target is described at once and then on a tick,
 * each followed by a keep pass, and the Kubernetes agents are kept running; the loops stop before the controller
 * closes.
 */
import { existsSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkpointPollMs } from "../chain/checkpoint-policy.js";
import { berthVersion } from "../version.js";
import { leaderTtlFromEnv } from "../store/leader.js";
import type { Connector } from "../mesh/transport/frames.js";
import { buildApp } from "./app.js";
import { hostNames } from "./edge.js";
import { DEFAULT_TICK_MS, startServeLoops } from "../serve/index.js";
import { agentHandlers, agentsEnv } from "./routes/agents.js";
import { auditHandlers } from "./routes/audit.js";
import { auditOperatorHandlers } from "./routes/audit-operator.js";
import { tlogHandlers } from "./routes/tlog.js";
import { kubernetesHandlers } from "./routes/kubernetes.js";
import { meshHandlers } from "./routes/mesh.js";
import { nodeAdminHandlers } from "./routes/node-admin.js";
import { operatorHandlers } from "./routes/operator.js";
import type { StreamTimings } from "./sse.js";
import { announcePlaintext } from "../mesh/client/connector.js";
import { type KubernetesAccess, openServerState, type ServerState } from "./state.js";
import { loadOrCreateToken } from "./token.js";

export const DEFAULT_PORT = 7420;
export const HANDLERS = {
  ...meshHandlers,
  ...nodeAdminHandlers,
  ...agentHandlers,
  ...kubernetesHandlers,
  ...auditHandlers,
  ...operatorHandlers,
  ...auditOperatorHandlers,
  ...tlogHandlers,
};

export interface ServerOptions {
  readonly dataDir: string;
  /** Issue 20: the controller's store (`postgres://…`, `sqlite:PATH`); default controller.db in `dataDir`. */
  readonly database?: string;
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** Default: dist/web beside this build. */
  readonly webRoot?: string;
  readonly logLevel?: "silent" | "error" | "warn" | "info" | "debug";
  /** Default stderr: stdout belongs to the CLI's own output. */
  readonly logStream?: NodeJS.WritableStream;
  readonly kubernetes?: KubernetesAccess;
  readonly connector?: Connector;
  readonly streamTimings?: StreamTimings;
  /** More names the Host header may carry (`--allowed-host`): a DNS name this server is reached by. */
  readonly allowedHosts?: readonly string[];
  /** PEM files: serve HTTPS. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** The lifecycle tick: every target is described at start and then this often (default 10 s; 0: never). */
  readonly tickMs?: number;
  /** Issue 20: the leader lease's TTL (default `$BERTH_LEADER_TTL_MS`, else 2.5 s: issue 37). */
  readonly leaderTtlMs?: number;
}

export interface RunningServer {
  /** `http://host:port` or `https://…` (no trailing slash). */
  readonly url: string;
  readonly token: string;
  /** The dashboard with the token in the fragment (never sent to the server by the browser). */
  readonly dashboardUrl: string;
  readonly state: ServerState;
  close(): Promise<void>;
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** A wildcard listener is reached by each of the machine's addresses (IP literals: no DNS name to rebind). */
function listenNames(host: string, allowed: readonly string[]): Set<string> {
  const wildcard = host === "0.0.0.0" || host === "::" || host === "[::]";
  const addresses = wildcard
    ? Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address))
    : [];
  return hostNames(host, [...allowed, ...addresses]);
}

export function defaultWebRoot(): string {
  for (const rel of ["../../web", "../../../dist/web"]) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(dir)) return dir;
  }
  return fileURLToPath(new URL("../../web", import.meta.url));
}

export async function startServer(o: ServerOptions): Promise<RunningServer> {
  const dataDir = resolve(o.dataDir);
  const token = loadOrCreateToken(dataDir);
  // Read before anything is opened, so a missing or unreadable file is refused with nothing to undo.
  const https = o.tls ? { cert: readFileSync(o.tls.certFile), key: readFileSync(o.tls.keyFile) } : undefined;
  const host = o.host ?? "127.0.0.1";
  const state = await openServerState({
    dataDir,
    version: berthVersion(),
    ...(o.database ? { database: o.database } : {}),
    ...(o.connector ? { connector: o.connector } : {}),
    ...(o.kubernetes ? { kubernetes: o.kubernetes } : {}),
  });
  const { app } = buildApp({
    state,
    token,
    webRoot: o.webRoot ?? defaultWebRoot(),
    handlers: HANDLERS,
    ...(o.logLevel ? { logLevel: o.logLevel } : {}),
    logStream: o.logStream ?? process.stderr,
    ...(o.streamTimings ? { streamTimings: o.streamTimings } : {}),
    hostNames: listenNames(host, o.allowedHosts ?? []),
    ...(https ? { https } : {}),
  });
  try {
    await app.listen({ host, port: o.port ?? DEFAULT_PORT });
  } catch (error) {
    await app.close();
    await state.close();
    throw error;
  }
  // spec/mesh.md §4.11: a plaintext opt-in is warned about and chained at every start of this long-lived controller.
  await announcePlaintext({
    optIn: state.plaintext,
    home: dataDir,
    chain: state.controller.store,
    via: "berth serve",
    always: true,
    warn: (line) => process.stderr.write(`berth serve: ${line}\n`),
  });
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : (o.port ?? DEFAULT_PORT);
  const url = `${https ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`;
  // spec/audit-chain.md §10 for the controller chain this long-lived process writes: a checkpoint T (default 600 s) after
  // the previous one when events were appended since (checked each minute, or each T when shorter), and one at clean
  // shutdown (src/chain/checkpoint-policy.ts).
  const chain = state.controller.store.chain;
  const checkpoints = setInterval(() => {
    chain.checkpointIfDue().catch((error: unknown) => app.log.warn({ err: error }, "chain checkpoint failed"));
  }, checkpointPollMs(chain.policy));
  checkpoints.unref();
  // Issue 20: every server competes for the store's leadership; only the leader places, settles and ticks.
  // What a takeover starts is waited for at close: it must not run on into a closed store.
  let takeover: Promise<void> = Promise.resolve();
  // Issue 35: the describes from here on (the takeover's, just below) serve the mesh loop's first pass too.
  const startedMs = Date.now();
  const lease = state.controller.lead({
    address: url,
    ttlMs: o.leaderTtlMs ?? leaderTtlFromEnv(process.env),
    onChange: (epoch, why) => {
      if (epoch === null) {
        app.log.warn({ why }, "no longer the leader: writes are answered with the leader's address");
        return;
      }
      app.log.info({ epoch, why }, "leader of the store");
      // Describe every node at once (each then refuses the deposed leader, stale_epoch), then settle what the
      // previous leader left: owned decisions of a gone owner, unsettled ones. Issue 35: a describe sent since this
      // server leads (the first tick's, at start) carries its epoch already and is not sent again.
      const leadsSinceMs = Date.now();
      takeover = takeover.then(() =>
        state.controller
          .refreshTargets(leadsSinceMs)
          .then(() => state.controller.settleReport())
          .then(
            () => undefined,
            (error: unknown) => app.log.warn({ err: error }, "settle after taking the leadership failed"),
          ),
      );
    },
  });
  // Returned (and `berth serve` prints its URL) once the first election has run: a lone server leads from its first request.
  await lease.started();
  const tickMs = o.tickMs ?? DEFAULT_TICK_MS;
  // Issue 16: the loops act only while this server leads the store (the leadership seam): the mesh's keep loop, and
  // the registry's Kubernetes agents kept running per their restart policy.
  const loops =
    tickMs > 0
      ? startServeLoops({
          controller: state.controller,
          agents: agentsEnv(state),
          tickMs,
          shouldAct: () => state.controller.isLeader(),
          startedMs,
          log: (message, fields) => app.log.info(fields ?? {}, message),
          warn: (message, fields) => app.log.warn(fields ?? {}, message),
          onError: (target, error) =>
            app.log.warn({ err: error }, target === "mesh" ? "node status tick failed" : "kubernetes keep pass failed"),
        })
      : null;
  let closing: Promise<void> | null = null;
  return {
    url,
    token,
    dashboardUrl: `${url}/#token=${token}`,
    state,
    close: () => {
      closing ??= (async () => {
        clearInterval(checkpoints);
        await loops?.stop();
        await app.close();
        await takeover;
        await chain.checkpointIfDue(true);
        await state.close();
      })();
      return closing;
    },
  };
}
