/**
 * `berth up`: berth on a laptop, on embedded defaults (see src/up/local-mesh.ts). Ctrl-C (or SIGTERM, a closed
 * terminal) stops everything it started, agents first (src/up/stop-local-mesh.ts); with --detach, `berth down` does.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import type { RunningServer } from "../server/index.js";
import type { UpLogFormat } from "../up/node-daemons.js";
import { CliError } from "./errors.js";
import { DATABASE_HELP } from "./flags.js";
import { berthHome } from "./paths.js";

const DEFAULT_UP_PORT = 7420;

/** The API and dashboard on the usual port, or on a free one when another berth (or anything) already holds it. */
async function serveApi(
  dataDir: string,
  port: number,
  logFormat: UpLogFormat,
  log: (line: string) => void,
): Promise<RunningServer> {
  const { startServer } = await import("../server/index.js");
  try {
    return await startServer({
      dataDir,
      port,
      logStream: await (await import("./serve.js")).logStreamFor(logFormat),
      ...(process.env.BERTH_DATABASE_URL ? { database: process.env.BERTH_DATABASE_URL } : {}),
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || port === 0) throw error;
    log(`port ${port} is in use; the API and dashboard take a free port instead`);
    return startServer({
      dataDir,
      port: 0,
      logStream: await (await import("./serve.js")).logStreamFor(logFormat),
      ...(process.env.BERTH_DATABASE_URL ? { database: process.env.BERTH_DATABASE_URL } : {}),
    });
  }
}

function samplesDir(): string {
  for (const rel of ["../../../samples", "../../samples"]) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(dir)) return dir;
  }
  throw new Error("berth up: the samples/ folder that ships with berth is missing");
}

export function registerUpCommands(program: Command): void {
  program
    .command("up")
    .description(
      "run berth locally: a controller (SQLite), three node daemons, sample agents deployed once; Ctrl-C (or `berth down`) stops it all. On this machine, whatever the current context",
    )
    .option("--data-dir <dir>", "berth home (keys, controller.db, node data, packages)", berthHome())
    .option("--database <url>", DATABASE_HELP)
    .option("--allow-root-agents", "run as root, run the agents as root too (default: as nobody)")
    .option(
      "--detach",
      "set everything up, print the summary and exit, leaving the node daemons and agents running until `berth down`",
    )
    .option(
      "--kube-context <ctx>",
      "the Kubernetes context to show as a second target (default: the kubeconfig's current one)",
    )
    .option("--no-kubernetes", "do not look for a Kubernetes context")
    .option(
      "--local-cluster",
      "also start a real single-node Kubernetes here (Linux, root, a berth checkout with tools/k8s built) and show it as the second target; `berth down` stops it",
    )
    .option("--port <port>", "port of the API and dashboard (a free one when it is taken)", String(DEFAULT_UP_PORT))
    .option(
      "--log-format <format>",
      "text (one line each) or json (pino's JSON lines), for berth up's own diagnostics and the node daemons' logs (default: text on a terminal, else json; the daemons' daemon.log files json)",
      "auto",
    )
    .option(
      "--json",
      "progress on stderr, then one JSON document on stdout once ready (nodes, agents, kubernetes, api, dashboard)",
    )
    .action(
      async (opts: {
        dataDir: string;
        database?: string;
        detach?: boolean;
        allowRootAgents?: boolean;
        kubeContext?: string;
        kubernetes: boolean;
        localCluster?: boolean;
        port: string;
        logFormat: string;
        json?: boolean;
      }) => {
        const port = Number(opts.port);
        const logFormat = (["auto", "text", "json"] as const).find((f) => f === opts.logFormat);
        if (logFormat === undefined)
          throw new CliError(
            `--log-format: ${JSON.stringify(opts.logFormat)} must be "text" or "json" (default: text on a terminal, else json)`,
            2,
          );
        // scripts/up's word on where it put `berth` (issue 36), for the banner; not passed on to what berth up starts.
        const shimNote = process.env.BERTH_SHIM_NOTE;
        delete process.env.BERTH_SHIM_NOTE;
        if (!Number.isInteger(port) || port < 0 || port > 65_535)
          throw new CliError(`--port ${JSON.stringify(opts.port)} must be a port number 0…65535`, 2);
        // Issue 20: the store every verb berth up runs (and its API server) uses; they inherit it from the environment.
        const database = (await import("./database.js")).databaseOf(opts.database);
        if (database) process.env.BERTH_DATABASE_URL = database;
        // Whatever asks berth up to stop — Ctrl-C, SIGTERM, a closed terminal (SIGHUP), or a reader of its output that
        // went away (EPIPE) — stops what it started, through the same clean path: never an orphaned node or agent.
        // A request during set-up is honoured as soon as set-up ends.
        let stopReason: string | null = null;
        let requestStop = (_why: string) => {};
        const stopRequested = new Promise<string>((resolveStop) => {
          requestStop = (why) => {
            stopReason ??= why;
            resolveStop(stopReason);
          };
        });
        // Kept installed for the whole run: a second Ctrl-C while the agents are being stopped must not kill berth up
        // half-way (the node daemons and verbs it runs sit in process groups of their own, so it does not reach them).
        for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
          process.on(signal, () => {
            if (stopReason !== null && signal !== "SIGHUP")
              log(`still stopping (${stopReason}): the agents first, then the nodes`);
            requestStop(signal);
          });
        }
        let outputGone = false;
        for (const stream of [process.stdout, process.stderr]) {
          stream.removeAllListeners("error");
          stream.on("error", () => {
            outputGone = true;
            requestStop("output closed");
          });
        }
        // With --json stdout carries the one document; what people read goes to stderr.
        const out = opts.json ? process.stderr : process.stdout;
        const log = (line: string) => {
          if (!outputGone) out.write(`${line}\n`);
        };
        // The installed `berth` (berth.cjs): its `node serve` runs without Node's ES module loader (issue 19: memory).
        const berthMain = fileURLToPath(new URL("./entry/berth.cjs", import.meta.url));
        const [{ AlreadyUp, up }, { describeKubernetesTarget, probeKubernetesTarget }] = await Promise.all([
          import("../up/local-mesh.js"),
          import("../up/kubernetes-target.js"),
        ]);
        let started: Awaited<ReturnType<typeof up>>;
        try {
          started = await up({
            home: opts.dataDir,
            samplesDir: samplesDir(),
            berthMain,
            log,
            detached: Boolean(opts.detach),
            allowRootAgents: opts.allowRootAgents === true,
            logFormat,
          });
        } catch (error) {
          if (error instanceof AlreadyUp) throw new CliError(error.message, 1, { kind: "refused" });
          throw error;
        }
        // Issue 34: the real node stack as the second target; the probe below then shows it as any other cluster.
        let localCluster: import("../up/local-cluster.js").LocalCluster | null = null;
        if (opts.localCluster) {
          const { startLocalCluster } = await import("../up/local-cluster.js");
          try {
            localCluster = startLocalCluster(opts.dataDir, log);
          } catch (error) {
            log(`${(error as Error).message}\nstopping what berth up started`);
            await started.shutdown();
            throw new CliError(`berth up: ${(error as Error).message.split("\n")[0]}`, 1);
          }
          process.env.KUBECONFIG = localCluster.kubeconfig;
        }
        const kubernetes =
          opts.kubernetes || localCluster
            ? await probeKubernetesTarget(berthMain, opts.dataDir, localCluster ? null : (opts.kubeContext ?? null))
            : null;
        if (kubernetes) log(describeKubernetesTarget(kubernetes));
        let server: RunningServer | null = null;
        let unadvertise = () => {};
        if (!opts.detach) {
          try {
            server = await serveApi(opts.dataDir, port, logFormat, log);
          } catch (error) {
            log(`the API server could not start (${(error as Error).message}); stopping what berth up started`);
            await started.shutdown();
            throw new CliError(`berth up: the API server could not start: ${(error as Error).message}`, 1);
          }
          // CLIs on this home go through this server while it runs, instead of opening the store beside it (issue 21).
          unadvertise = (await import("./remote/serve-file.js")).advertiseServer(resolve(opts.dataDir), server.url);
          log(`api         ${server.url}/api/v1   (token in ${join(opts.dataDir, "api.token")})`);
          log(`dashboard: ${server.dashboardUrl}`);
        }
        log("");
        log(`berth is up: ${started.nodes.length} nodes, ${started.agents.length} agents. Try, in another terminal:`);
        // Issue 36: how the second terminal reaches berth (scripts/up's shim says where it put it), and its home when
        // it is not the one every verb finds by itself.
        if (shimNote) log(`  # ${shimNote}`);
        if (resolve(opts.dataDir) !== resolve(homedir(), ".berth")) log(`  export BERTH_HOME=${opts.dataDir}`);
        log("  berth agents                      # every agent and where it runs");
        log("  berth agent logs heartbeat        # its output, captured by the node");
        log("  berth nodes list --refresh        # nodes, tiers, liveness");
        log("  berth place <package-dir> --dry-run   # the placement explain, nothing sent");
        log("  berth audit verify --key-file $BERTH_HOME/keys/controller.key");
        log("  berth deploy $BERTH_HOME/up/agents/heartbeat.json   # again: a no-op, never a second copy");
        if (server)
          log("  open the dashboard link above: nodes, instances, placements with their explain, the live audit tail");
        if (opts.json) {
          const doc = {
            home: resolve(opts.dataDir),
            nodes: started.nodes.map((n) => ({
              name: n.name,
              address: n.address,
              node_id: n.nodeId,
              pid: n.pid ?? null,
            })),
            agents: started.agents,
            kubernetes,
            api: server ? `${server.url}/api/v1` : null,
            dashboard: server?.dashboardUrl ?? null,
            detached: Boolean(opts.detach),
            local_cluster: localCluster ? { kubeconfig: localCluster.kubeconfig, state_dir: localCluster.dir } : null,
          };
          if (!outputGone) process.stdout.write(`${JSON.stringify(doc)}\n`);
        }
        if (opts.detach && stopReason === null) {
          log(
            "detached: the node daemons and agents keep running; `berth serve` gives the API and dashboard; `berth down` stops them all",
          );
          process.exit(0);
        }
        if (stopReason === null) log("ready; press Ctrl-C to stop the agents and the nodes");
        const why = await stopRequested;
        log(`stopping (${why})…`);
        // Before the server closes: the verbs that stop the agents below must not look for it.
        unadvertise();
        await server?.close();
        await started.shutdown();
        if (localCluster) (await import("../up/local-cluster.js")).stopLocalCluster(opts.dataDir, log);
        log("stopped");
      },
    );
}
