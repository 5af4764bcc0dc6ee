/**
 * `berth serve`: the controller as an HTTP service (src/server). Prints the dashboard URL with the token in its
 * fragment, runs until SIGINT or SIGTERM, then closes cleanly. Loopback only unless --host says otherwise, with a
 * warning unless TLS is on: the token is the only thing between the network and every verb, and without TLS it
 * crosses the network in clear. `--allowed-host` names the DNS names clients use (the Host check, docs/security.md).
 * Diagnostics are pino JSON lines on stderr (one per request at the default `info`); stdout is for people.
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import type { RunningServer } from "../server/index.js";
import { CliError, describeZodIssues } from "./errors.js";
import { DATABASE_HELP } from "./flags.js";
import { berthHome } from "./paths.js";

/** The flags' schema, built when `berth serve` runs: zod is not loaded for every verb (issue 19). */
async function serveFlags() {
  const { z } = await import("zod");
  const HostName = z
    .string()
    .min(1)
    .max(253)
    .regex(/^[A-Za-z0-9.:-]+$/, "must be a host name or an IP address");
  return z
    .strictObject({
      host: HostName,
      allowedHost: z
        .array(
          z
            .string()
            .min(1)
            .max(253)
            .regex(/^[A-Za-z0-9.-]+$|^[0-9A-Fa-f:.]+$/, "must be a host name or an IP address, without a port"),
        )
        .max(64),
      tlsCert: z.string().min(1).optional(),
      tlsKey: z.string().min(1).optional(),
      port: z.coerce.number().int().min(0, "must be 0…65535").max(65_535, "must be 0…65535"),
      dataDir: z.string().min(1),
      database: z.string().min(1).optional(),
      kubeconfig: z.string().min(1).optional(),
      logLevel: z.enum(["silent", "error", "warn", "info", "debug"]),
      logFormat: z.enum(["auto", "text", "json"], {
        error: 'must be "text" or "json" (default: text on a terminal, else json)',
      }),
      json: z.boolean().optional(),
    })
    .refine((f) => (f.tlsCert === undefined) === (f.tlsKey === undefined), {
      path: ["tlsKey"],
      message: "--tls-cert and --tls-key go together: give both PEM files, or neither",
    });
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** Issue 36 item 8: one readable line per log record on a terminal; pino's JSON lines elsewhere. */
export async function logStreamFor(format: "auto" | "text" | "json"): Promise<NodeJS.WritableStream> {
  const { humanLogStream, humanLogs } = await import("../kit/log-human.js");
  return humanLogs(format, process.stderr.isTTY) ? humanLogStream(process.stderr) : process.stderr;
}

export function registerServeCommands(program: Command): void {
  program
    .command("serve")
    .description(
      "serve the HTTP API, the audit event stream and the dashboard (token in $BERTH_HOME/api.token); the server a context names, run on the controller host",
    )
    .option("--host <host>", "address to listen on (loopback unless you mean otherwise)", "127.0.0.1")
    .option("--port <port>", "port to listen on (0 picks a free one)", "7420")
    .option(
      "--allowed-host <name>",
      "a DNS name clients reach this server by (the Host header it accepts besides its address and localhost); repeatable",
      collect,
      [],
    )
    .option("--tls-cert <file>", "PEM certificate: serve HTTPS (with --tls-key)")
    .option("--tls-key <file>", "PEM private key of --tls-cert")
    .option("--data-dir <dir>", "berth home (controller.db, keys, api.token …)", berthHome())
    .option("--database <url>", DATABASE_HELP)
    .option("--kubeconfig <path>", "the kubeconfig for Kubernetes agents (default $KUBECONFIG, else ~/.kube/config)")
    .option(
      "--log-level <level>",
      "diagnostic JSON lines on stderr: silent, error, warn (refused requests and failures), info (one line per request), debug",
      "info",
    )
    .option(
      "--log-format <format>",
      "text (one line each; the default on a terminal) or json (the default otherwise, for collectors)",
      "auto",
    )
    .option("--json", "print one JSON line {url, dashboard} once listening")
    .action(async (raw: Record<string, unknown>) => {
      const [ServeFlags, { isLoopback, startServer }] = await Promise.all([serveFlags(), import("../server/index.js")]);
      const parsed = ServeFlags.safeParse(raw);
      if (!parsed.success)
        throw new CliError(
          describeZodIssues(
            "serve",
            parsed.error.issues.map((i) => ({
              ...i,
              path: i.path.map((p) => `--${String(p).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`),
            })),
          ),
        );
      const o = parsed.data;
      if (o.kubeconfig) process.env.KUBECONFIG = resolve(o.kubeconfig);
      const tls = o.tlsCert && o.tlsKey ? { certFile: resolve(o.tlsCert), keyFile: resolve(o.tlsKey) } : undefined;
      if (!isLoopback(o.host) && tls === undefined) {
        process.stderr.write(
          `warning: listening on ${o.host}, not loopback, without TLS: anyone who can reach it and holds the token controls every agent, and the token crosses the network in clear. This needs TLS: start it with --tls-cert FILE --tls-key FILE (and --allowed-host NAME for each name clients use).\n`,
        );
      }
      const database = (await import("./database.js")).databaseOf(o.database);
      const logStream = await logStreamFor(o.logFormat);
      const server = await startWaitingForStore(() =>
        startServer({
          dataDir: o.dataDir,
          ...(database ? { database } : {}),
          host: o.host,
          port: o.port,
          logLevel: o.logLevel,
          logStream,
          allowedHosts: o.allowedHost,
          ...(tls ? { tls } : {}),
        }),
      );
      // How CLIs on this home find this server and go through it instead of opening the store beside it (issue 21).
      const { advertiseServer } = await import("./remote/serve-file.js");
      const unadvertise = advertiseServer(resolve(o.dataDir), server.url, tls?.certFile);
      if (o.json) process.stdout.write(`${JSON.stringify({ url: server.url, dashboard: server.dashboardUrl })}\n`);
      else
        process.stdout.write(
          `berth serve: API at ${server.url}/api/v1 (data dir ${resolve(o.dataDir)})\ndashboard: ${server.dashboardUrl}\n`,
        );
      await new Promise<void>((done) => {
        process.once("SIGINT", () => done());
        process.once("SIGTERM", () => done());
      });
      unadvertise();
      await server.close();
      if (!o.json) process.stdout.write("berth serve: stopped\n");
    });
}

/**
 * Issue 37 (campaign seed 2189: a `berth serve` started while PostgreSQL was restarting exited at once). A service
 * whose store is away at start waits for it, as users expect of a daemon under a supervisor: each try is logged on
 * stderr with the reason, the wait grows from 0.5 s to 10 s, and SIGINT or SIGTERM ends the wait (exit 1). A wrong
 * address, password or database name is not waited out: it fails at once, as before.
 */
async function startWaitingForStore(start: () => Promise<RunningServer>): Promise<RunningServer> {
  const { isStoreAway } = await import("../store/open.js");
  let stopped = false;
  let wake: (() => void) | null = null;
  const stop = () => {
    stopped = true;
    wake?.();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    for (let attempt = 1, waitMs = 500; ; attempt++, waitMs = Math.min(waitMs * 2, 10_000)) {
      try {
        return await start();
      } catch (error) {
        const message = (error as Error).message;
        if (!isStoreAway(error) || stopped) throw new CliError(`berth serve could not start: ${message}`, 1);
        process.stderr.write(
          `berth serve: the controller store is not reachable (try ${attempt}: ${message}); trying again in ${(waitMs / 1000).toFixed(1)} s (Ctrl-C stops)\n`,
        );
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
        if (stopped)
          throw new CliError(
            `berth serve could not start: stopped while waiting for the controller store (${message})`,
            1,
          );
      }
    }
  } finally {
    process.removeListener("SIGINT", stop);
    process.removeListener("SIGTERM", stop);
  }
}
