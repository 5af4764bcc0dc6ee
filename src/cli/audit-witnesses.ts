/**
 * `berth audit witnesses` (issue 38): describes every known node now and shows, per node, the newest checkpoint of
 * this controller's chain it holds and whether this store's chain is consistent with it (a node refuses every
 * request from a store that is not: `witness`). Wiring only: the report is `MeshController.witnesses`, each row's
 * verdict `src/core/mesh/witness-report.ts`. On the controller host (the nodes are described with its key); through
 * a server it refuses and says to use --local.
 */
import type { Command } from "commander";
import type { WitnessReport } from "../core/mesh/witness-report.js";
import { DATABASE_HELP } from "./flags.js";
import { answer } from "./output.js";
import { berthHome, defaultPaths } from "./paths.js";

export function registerAuditWitnesses(audit: Command): void {
  audit
    .command("witnesses")
    .description(
      "describe every known node and show the newest checkpoint of this controller's chain each holds, and whether this chain is consistent with it",
    )
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option("--database <url>", DATABASE_HELP)
    .option("--key-file <path>", "the controller's identity key", defaultPaths.controllerKey())
    .option("--local", "use this machine's files, not the current context or the `berth serve` running on this home")
    .option(
      "--json",
      "print one JSON document: {chain_id, checkpoint, nodes: [{node_id, addr, state, size, root, ours}]}",
    )
    .action(
      async (
        opts: { dataDir: string; database?: string; keyFile: string; local?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        const { serverFor, localOnly } = await import("./remote/server-verb.js");
        const remote = await serverFor({
          local: opts.local === true,
          dataDir: opts.dataDir,
          explicitHome: cmd.getOptionValueSource("dataDir") === "cli",
        });
        if (remote)
          throw localOnly(
            "berth audit witnesses",
            "the nodes are described with the controller's key, and the chain is read here",
            remote.server,
          );
        const { withController } = await import("./controller.js");
        const report = await withController({ ...opts, quiet: true }, (c) => c.witnesses());
        const bad = report.nodes.filter((n) => n.state === "inconsistent" || n.state === "ahead_of_this_store");
        answer(opts.json, { ok: bad.length === 0, ...report }, renderWitnesses(report));
        if (bad.length > 0) process.exitCode = 1;
      },
    );
}

function renderWitnesses(r: WitnessReport): string {
  const head = r.checkpoint
    ? `chain ${r.chain_id} checkpoint tree size ${r.checkpoint.size} root ${r.checkpoint.root}`
    : `chain ${r.chain_id} has no checkpoint yet (berth audit checkpoint)`;
  const rows = r.nodes.map((n) => {
    const held = n.size === null ? "-" : `${n.size} ${n.root ?? "?"}`;
    return `${n.node_id ?? "?"}  ${n.addr}  ${n.state}  ${held}`;
  });
  return [head, "NODE  ADDR  STATE  HELD (TREE SIZE ROOT)", ...rows].join("\n");
}
