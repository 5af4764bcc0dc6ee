/**
 * `berth node serve`: the node daemon's command. Registered in the whole tree by node.ts, and alone in the daemon's
 * own tree (`buildNodeServeProgram`), which main.ts runs for `berth node serve` so that a daemon, which stays up for
 * months on a 512 MB board, never loads the other verbs (issue 19: memory; the figures are in src/mesh/node/README.md).
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import type { NodeDaemon } from "../mesh/node/daemon.js";
import { CliError } from "./errors.js";
import { collect, defaultDataDir, keys, labels } from "./node-flags.js";
import { finishProgram, rootCommand } from "./program-frame.js";
import { berthVersion } from "../version.js";

/** The `berth node` group, as both trees name and describe it. */
export function nodeGroup(program: Command): Command {
  return program
    .command("node")
    .description(
      "a node daemon: runs signed packages as processes for authorised controllers (init, serve, show: this machine's node, never through a server; rehome: through the controller's server like every controller verb)",
    );
}

/** `berth` with `node serve` as its only verb. */
export function buildNodeServeProgram(): Command {
  const program = rootCommand();
  registerNodeServe(nodeGroup(program));
  return finishProgram(program);
}

export function registerNodeServe(node: Command): void {
  node
    .command("serve")
    .description("serve the signed control protocol; instances keep running when the daemon stops")
    .requiredOption("--listen <addr>", "host:port to listen on (port 0 picks a free port)")
    .option("--data-dir <dir>", "the node's data directory", defaultDataDir())
    .option("--controller <key>", "authorise a controller public key, in addition to node.json (repeatable)", collect)
    .option("--signer <key>", "trust a package signer key, in addition to signers.json (repeatable)", collect)
    .option("--board <board>", "board override, e.g. pi5")
    .option("--label <key=value>", "extra fact label (repeatable)", collect)
    .option("--name <name>", "display name override")
    .option("--poll-ms <ms>", "how often re-adopted instances are probed", "500")
    .option("--sweep-ms <ms>", "how often revoked instances are swept", "60000")
    .option(
      "--transport <kind>",
      "tls (default: TLS 1.3 bound to the identity keys) or plaintext (explicit migration window, warned and chained; also node.json transport)",
    )
    .option(
      "--allow-root-agents",
      "run agents as root when the daemon is root and node.json names no agent_user (warned)",
    )
    .option(
      "--agent-user <name>",
      "the unprivileged user a root daemon runs agents as, for this run (over node.json agent_user)",
    )
    .option(
      "--log-level <level>",
      "diagnostics on stderr: silent, error, warn, info (place, start, exit, stop, unload, refusal), debug",
      "info",
    )
    .option(
      "--log-format <format>",
      "text (one line each; the default on a terminal) or json (pino's JSON lines; the default otherwise, for collectors)",
      "auto",
    )
    .option("--json", "accepted for uniformity: the one line serve prints is always a JSON document")
    .action(
      async (opts: {
        transport?: string;
        listen: string;
        dataDir: string;
        controller?: string[];
        signer?: string[];
        board?: string;
        label?: string[];
        name?: string;
        pollMs: string;
        sweepMs: string;
        allowRootAgents?: boolean;
        agentUser?: string;
        logLevel: string;
        logFormat: string;
      }) => {
        const ms = (flag: string, v: string) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 10)
            throw new CliError(`${flag}: ${JSON.stringify(v)} must be an integer ≥ 10`);
          return n;
        };
        if (opts.board !== undefined && !/^[a-z0-9-]{1,32}$/.test(opts.board))
          throw new CliError("--board: must match ^[a-z0-9-]{1,32}$");
        if (opts.agentUser !== undefined && !/^[a-z_][a-z0-9_-]{0,31}$/.test(opts.agentUser))
          throw new CliError("--agent-user: must be a user name (^[a-z_][a-z0-9_-]{0,31}$)");
        if (opts.transport !== undefined && opts.transport !== "tls" && opts.transport !== "plaintext") {
          throw new CliError(`--transport: ${JSON.stringify(opts.transport)} must be tls or plaintext`);
        }
        const transport = opts.transport as "tls" | "plaintext" | undefined;
        const [{ NodeDaemon }, { isLoopbackHost, parseAddr }, { NODE_LOG_LEVELS }] = await Promise.all([
          import("../mesh/node/daemon.js"),
          import("../mesh/transport/tcp.js"),
          import("../mesh/node/log.js"),
        ]);
        const logLevel = NODE_LOG_LEVELS.find((l) => l === opts.logLevel);
        if (logLevel === undefined)
          throw new CliError(
            `--log-level: ${JSON.stringify(opts.logLevel)} must be one of ${NODE_LOG_LEVELS.join(", ")}`,
          );
        if (!["auto", "text", "json"].includes(opts.logFormat))
          throw new CliError(
            `--log-format: ${JSON.stringify(opts.logFormat)} must be "text" or "json" (default: text on a terminal, else json)`,
          );
        const { humanLogs } = await import("../kit/log-human.js");
        let daemon: NodeDaemon;
        try {
          daemon = await NodeDaemon.start({
            dataDir: resolve(opts.dataDir),
            listen: opts.listen,
            controllers: keys("--controller", opts.controller),
            signers: keys("--signer", opts.signer),
            ...(opts.board ? { board: opts.board } : {}),
            labels: labels(opts.label),
            ...(opts.name ? { name: opts.name } : {}),
            version: berthVersion(),
            pollMs: ms("--poll-ms", opts.pollMs),
            sweepMs: ms("--sweep-ms", opts.sweepMs),
            ...(transport ? { transport } : {}),
            ...(opts.allowRootAgents ? { allowRootAgents: true } : {}),
            ...(opts.agentUser !== undefined ? { agentUser: opts.agentUser } : {}),
            logLevel,
            humanLogs: humanLogs(opts.logFormat as "auto" | "text" | "json", process.stderr.isTTY),
          });
        } catch (error) {
          throw new CliError(`node serve: ${(error as Error).message}`);
        }
        // Issue 12: say so when the control port is reachable from other machines (a LAN, a hostile one included).
        const beyondMachine = !isLoopbackHost(parseAddr(daemon.address).host);
        if (beyondMachine) {
          process.stderr.write(
            `berth node serve: warning: listening on ${daemon.address}, reachable beyond this machine; only authorised controllers are served, but anyone who can reach the port can connect. Use --listen 127.0.0.1:PORT to serve this machine only.\n`,
          );
        }
        if (daemon.transport === "plaintext") {
          process.stderr.write(
            `berth node serve: warning: plaintext transport (${transport === "plaintext" ? "--transport plaintext" : "node.json transport"}): control messages, agent environments and output cross the network unencrypted; chained as transport.plaintext. Drop it once every controller speaks TLS.\n`,
          );
        }
        if (daemon.agentRefusal !== null)
          process.stderr.write(
            `berth node serve: warning: ${daemon.agentRefusal}; every place and start will be refused.\n`,
          );
        else if (opts.allowRootAgents && process.getuid?.() === 0) {
          process.stderr.write("berth node serve: warning: --allow-root-agents: agents run as root on this machine.\n");
        }
        // One JSON line that scripts and tests wait for.
        process.stdout.write(
          `${JSON.stringify({ event: "listening", address: daemon.address, listening_beyond_machine: beyondMachine, transport: daemon.transport, node_id: daemon.nodeId, boot_id: daemon.bootId, recovery: daemon.recovery })}\n`,
        );
        const shutdown = () => {
          void daemon.close().finally(() => process.exit(0));
        };
        process.once("SIGTERM", shutdown);
        process.once("SIGINT", shutdown);
      },
    );
}
