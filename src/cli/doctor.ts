/**
 * `berth doctor [--repair]`: checks the controller store for states an older berth could leave behind and, with
 * `--repair`, mends them, each repair chained (`controller.repair`, with the operator who asked). Dry run by
 * default: it says what it would do and changes nothing.
 *
 * Today one finding (issue 21 case 2): a decision marked `unsettled` again after a settle adopted it, so a placement
 * already records it; every settle used to fail on it with a unique-constraint error. Its placement is the truth, so
 * the repair marks the decision placed. It also lists decisions other processes hold right now (informational).
 */
import type { Command } from "commander";
import { answer } from "./output.js";
import { berthHome, defaultPaths } from "./paths.js";

export function registerDoctorCommands(program: Command): void {
  program
    .command("doctor")
    .description("check the controller store for states left by an older berth; --repair mends them (chained)")
    .option("--repair", "mend what was found (default: only say what would be done)")
    .option("--data-dir <dir>", "controller data directory", berthHome())
    .option("--key-file <path>", "the controller's identity key", defaultPaths.controllerKey())
    .option("--json", "print one JSON document")
    .action(async (opts: { repair?: boolean; dataDir?: string; keyFile?: string; json?: boolean }) => {
      const { operatorIdentity, withController } = await import("./controller.js");
      const doc = await withController({ ...opts, quiet: true }, async (c) => {
        const wedged = opts.repair ? await c.repairWedged(operatorIdentity("berth doctor")) : await c.wedged();
        const inFlight = (await c.store.ownedDecisions())
          .filter((o) => o.decision.owner_id !== c.store.lease.owner_id)
          .map((o) => ({ decision_id: o.decision.id, name: o.decision.name, state: o.decision.state, owner: o.verdict.why }));
        return { repaired: opts.repair === true, wedged, in_flight: inFlight };
      });
      const lines = doc.wedged.map(
        (w) =>
          `${doc.repaired ? "repaired" : "would repair"}: decision ${w.decision_id} (${w.name}) is unsettled while placement ${w.instance_id} on node ${w.node_id} records it; ${doc.repaired ? "marked" : "would mark"} it placed`,
      );
      for (const f of doc.in_flight) lines.push(`in flight: decision ${f.decision_id} (${f.name}, ${f.state}): ${f.owner}`);
      if (doc.wedged.length === 0) lines.push("no wedged decisions");
      else if (!doc.repaired) lines.push("run `berth doctor --repair` to mend (chained as controller.repair)");
      answer(opts.json, doc, lines.join("\n"));
    });
}
