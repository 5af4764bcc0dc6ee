/** `berth node init|serve|show|rehome|cordon|uncordon|forget|drain`: a node daemon that runs workloads for its authorised controllers. */
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { CliError } from "./errors.js";
import { registerNodeAdmin } from "./node-admin.js";
import { registerNodeRehome } from "./node-rehome.js";
import { collect, defaultDataDir, keys } from "./node-flags.js";
import { nodeGroup, registerNodeServe } from "./node-serve.js";
import { answer } from "./output.js";

export function registerNodeCommands(program: Command): void {
  const node = nodeGroup(program);

  node
    .command("init")
    .description("create a node data directory: identity key (0600), node.json, signers.json")
    .option("--data-dir <dir>", "the node's data directory", defaultDataDir())
    .option("--name <name>", "display name in the node's facts", "node")
    .option("--controller <key>", "authorise a controller public key (repeatable)", collect)
    .option("--signer <key>", "trust a package signer public key (repeatable)", collect)
    .option("--board <board>", "board override, e.g. pi5")
    .option(
      "--agent-user <name>",
      "when the daemon runs as root, run agents as this unprivileged user (node.json agent_user)",
    )
    .option(
      "--create-agent-user",
      "create --agent-user as a system user (no home, no login shell) if it does not exist",
    )
    .option(
      "--allow-root-agents",
      "let a root daemon run agents as root (node.json allow_root_agents; not for a shared machine)",
    )
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
        const [{ createSystemUser }, { initNodeDataDir }] = await Promise.all([
          import("../mesh/node/confine-user.js"),
          import("../mesh/node/init.js"),
        ]);
        if (opts.board !== undefined && !/^[a-z0-9-]{1,32}$/.test(opts.board))
          throw new CliError("--board: must match ^[a-z0-9-]{1,32}$");
        if (opts.agentUser !== undefined && !/^[a-z_][a-z0-9_-]{0,31}$/.test(opts.agentUser))
          throw new CliError("--agent-user: must be a user name matching ^[a-z_][a-z0-9_-]{0,31}$");
        if (opts.createAgentUser && opts.agentUser === undefined)
          throw new CliError("--create-agent-user: needs --agent-user NAME");
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
        const doc = {
          data_dir: r.dataDir,
          node_id: r.nodeId,
          public_key: r.publicKey,
          agent_user: opts.agentUser ?? null,
          allow_root_agents: opts.allowRootAgents === true,
        };
        answer(
          opts.json,
          doc,
          `node ${doc.node_id}\npublic key  ${doc.public_key}\ndata dir    ${doc.data_dir}${doc.agent_user ? `\nagent user  ${doc.agent_user}` : ""}`,
        );
      },
    );

  registerNodeServe(node);

  node
    .command("show")
    .description("print the node's id and public key")
    .option("--data-dir <dir>", "the node's data directory", defaultDataDir())
    .option("--json", "print one JSON document")
    .action(async (opts: { dataDir: string; json?: boolean }) => {
      const [{ loadKeyFile }, { FILES }, { nodeIdOf }] = await Promise.all([
        import("../keys/key-file.js"),
        import("../mesh/node/config.js"),
        import("../core/crypto/ed25519.js"),
      ]);
      const key = loadKeyFile(join(resolve(opts.dataDir), FILES.key));
      const doc = { node_id: nodeIdOf(key.publicKey), public_key: key.publicKey };
      answer(opts.json, doc, `node ${doc.node_id}\npublic key  ${doc.public_key}`);
    });

  registerNodeRehome(node);
  registerNodeAdmin(node);
}
