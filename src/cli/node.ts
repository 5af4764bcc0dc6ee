/** `berth node init|serve|show|rehome|cordon|uncordon|forget|drain`: a node daemon that runs workloads for its authorised controllers. */
import { join, resolve } from "node:path";
import type { Command } from "commander";
import type { NodeDaemon } from "../mesh/node/daemon.js";
import { CliError, invalidInput } from "./errors.js";
import { registerNodeAdmin } from "./node-admin.js";
import { registerNodeRehome } from "./node-rehome.js";
import { answer } from "./output.js";
import { berthHome } from "./paths.js";
import { berthVersion } from "../version.js";

// A plain pattern rather than a zod schema: registration stays light (issue 19); the message names the flag the same way.
const HEX_KEY = /^[0-9a-f]{64}$/;
const collect = (value: string, previous: string[] = []) => [...previous, value];

function keys(flag: string, values: string[] | undefined): string[] {
  return (values ?? []).map((v) => {
    if (!HEX_KEY.test(v)) throw invalidInput(`${flag}: value: must be 64 lowercase hex characters (an Ed25519 public key)`);
    return v;
  });
}

function labels(values: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const i = v.indexOf("=");
    if (i <= 0) throw new CliError(`--label: value ${JSON.stringify(v)} must look like key=value`);
    out[v.slice(0, i)] = v.slice(i + 1);
  }
  return out;
}

const defaultDataDir = () => join(berthHome(), "node");

export function registerNodeCommands(program: Command): void {
  const node = program.command("node").description("a node daemon: runs signed packages as processes for authorised controllers (init, serve, show: this machine's node, never through a server; rehome: through the controller's server like every controller verb)");

  node
    .command("init")
    .description("create a node data directory: identity key (0600), node.json, signers.json")
    .option("--data-dir <dir>", "the node's data directory", defaultDataDir())
    .option("--name <name>", "display name in the node's facts", "node")
    .option("--controller <key>", "authorise a controller public key (repeatable)", collect)
    .option("--signer <key>", "trust a package signer public key (repeatable)", collect)
    .option("--board <board>", "board override, e.g. pi5")
    .option("--agent-user <name>", "when the daemon runs as root, run agents as this unprivileged user (node.json agent_user)")
    .option("--create-agent-user", "create --agent-user as a system user (no home, no login shell) if it does not exist")
    .option("--allow-root-agents", "let a root daemon run agents as root (node.json allow_root_agents; not for a shared machine)")
    .option("--json", "print one JSON document")
    .action(
      async (opts: {
        dataDir: string;
        name: string;
        controller?: string[];
        signer?: string[];
        board?: string;
        agentUser?: string;
        createAgentUser?: boolean;
        allowRootAgents?: boolean;
        json?: boolean;
      }) => {
        const [{ createSystemUser }, { initNodeDataDir }] = await Promise.all([import("../mesh/node/confine-user.js"), import("../mesh/node/init.js")]);
        if (opts.board !== undefined && !/^[a-z0-9-]{1,32}$/.test(opts.board)) throw new CliError("--board: must match ^[a-z0-9-]{1,32}$");
        if (opts.agentUser !== undefined && !/^[a-z_][a-z0-9_-]{0,31}$/.test(opts.agentUser)) throw new CliError("--agent-user: must be a user name matching ^[a-z_][a-z0-9_-]{0,31}$");
        if (opts.createAgentUser && opts.agentUser === undefined) throw new CliError("--create-agent-user: needs --agent-user NAME");
        if (opts.createAgentUser && opts.agentUser !== undefined) {
          try {
            createSystemUser(opts.agentUser);
          } catch (error) {
            throw new CliError(`node init: ${(error as Error).message}`);
          }
        }
        const r = initNodeDataDir(opts.dataDir, {
          name: opts.name,
          controllers: keys("--controller", opts.controller),
          signers: keys("--signer", opts.signer),
          ...(opts.board ? { board: opts.board } : {}),
          config: {
            ...(opts.agentUser !== undefined ? { agent_user: opts.agentUser } : {}),
            ...(opts.allowRootAgents ? { allow_root_agents: true } : {}),
          },
        });
        const doc = { data_dir: r.dataDir, node_id: r.nodeId, public_key: r.publicKey, agent_user: opts.agentUser ?? null, allow_root_agents: opts.allowRootAgents === true };
        answer(opts.json, doc, `node ${doc.node_id}\npublic key  ${doc.public_key}\ndata dir    ${doc.data_dir}${doc.agent_user ? `\nagent user  ${doc.agent_user}` : ""}`);
      },
    );

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
    .option("--transport <kind>", "tls (default: TLS 1.3 bound to the identity keys) or plaintext (explicit migration window, warned and chained; also node.json transport)")
    .option("--allow-root-agents", "run agents as root when the daemon is root and node.json names no agent_user (warned)")
    .option("--log-level <level>", "diagnostic pino JSON lines on stderr: silent, error, warn, info (place, start, exit, stop, unload, refusal), debug", "info")
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
        logLevel: string;
      }) => {
        const ms = (flag: string, v: string) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 10) throw new CliError(`${flag}: ${JSON.stringify(v)} must be an integer ≥ 10`);
          return n;
        };
        if (opts.board !== undefined && !/^[a-z0-9-]{1,32}$/.test(opts.board)) throw new CliError("--board: must match ^[a-z0-9-]{1,32}$");
        if (opts.transport !== undefined && opts.transport !== "tls" && opts.transport !== "plaintext") {
          throw new CliError(`--transport: ${JSON.stringify(opts.transport)} must be tls or plaintext`);
        }
        const transport = opts.transport as "tls" | "plaintext" | undefined;
        const [{ NodeDaemon }, { isLoopbackHost, parseAddr }, { NODE_LOG_LEVELS }] = await Promise.all([import("../mesh/node/daemon.js"), import("../mesh/transport/tcp.js"), import("../mesh/node/log.js")]);
        const logLevel = NODE_LOG_LEVELS.find((l) => l === opts.logLevel);
        if (logLevel === undefined) throw new CliError(`--log-level: ${JSON.stringify(opts.logLevel)} must be one of ${NODE_LOG_LEVELS.join(", ")}`);
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
            logLevel,
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
        if (daemon.agentRefusal !== null) process.stderr.write(`berth node serve: warning: ${daemon.agentRefusal}; every place and start will be refused.\n`);
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

  node
    .command("show")
    .description("print the node's id and public key")
    .option("--data-dir <dir>", "the node's data directory", defaultDataDir())
    .option("--json", "print one JSON document")
    .action(async (opts: { dataDir: string; json?: boolean }) => {
      const [{ loadKeyFile }, { FILES }, { nodeIdOf }] = await Promise.all([import("../keys/key-file.js"), import("../mesh/node/config.js"), import("../core/crypto/ed25519.js")]);
      const key = loadKeyFile(join(resolve(opts.dataDir), FILES.key));
      const doc = { node_id: nodeIdOf(key.publicKey), public_key: key.publicKey };
      answer(opts.json, doc, `node ${doc.node_id}\npublic key  ${doc.public_key}`);
    });

  registerNodeRehome(node);
  registerNodeAdmin(node);
}
