/**
 * `berth doctor [--repair]`: checks the controller store for states an older berth could leave behind and, with
 * `--repair`, mends them, each repair chained (`controller.repair`, with the operator who asked). Dry run by
 * default: it says what it would do and changes nothing.
 *
 * Today one finding (issue 21 case 2): a decision marked `unsettled` again after a settle adopted it, so a placement
 * already records it; every settle used to fail on it with a unique-constraint error. Its placement is the truth, so
 * the repair marks the decision placed. It also lists decisions other processes hold right now (informational).
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import type { DoctorDocument } from "../server/routes/operator.js";
import { DATABASE_HELP } from "./flags.js";
import { answer } from "./output.js";
import { berthHome, defaultPaths } from "./paths.js";

export function registerDoctorCommands(program: Command): void {
  program
    .command("doctor")
    .description("check the controller store for states left by an older berth; --repair mends them (chained)")
    .option("--repair", "mend what was found (default: only say what would be done)")
    .option("--data-dir <dir>", "controller data directory", berthHome())
    .option("--database <url>", DATABASE_HELP)
    .option("--key-file <path>", "the controller's identity key", defaultPaths.controllerKey())
    .option("--local", "use this machine's files, not the current context or the `berth serve` running on this home")
    .option("--json", "print one JSON document")
    .action(
      async (
        opts: {
          repair?: boolean;
          dataDir?: string;
          database?: string;
          keyFile?: string;
          local?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const [{ serverFor, callServer }, { doctorDocument }] = await Promise.all([
          import("./remote/server-verb.js"),
          import("../server/routes/operator.js"),
        ]);
        const remote = await serverFor({
          local: opts.local === true,
          ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
          explicitHome: cmd.getOptionValueSource("dataDir") === "cli",
        });
        let doc: DoctorDocument;
        if (remote) {
          // The server repairs with the caller (its token's id and address) as the operator it chains.
          doc = (await callServer(
            remote.server,
            opts.repair ? "POST" : "GET",
            opts.repair ? "/doctor/repair" : "/doctor",
            opts.repair ? {} : undefined,
          )) as DoctorDocument;
        } else {
          const [{ operatorIdentity, withController }, { databaseOf }, { homeMissing, noHome }] = await Promise.all([
            import("./controller.js"),
            import("./database.js"),
            import("./errors.js"),
          ]);
          // Issue 36: doctor on a home that is not there says where it looked and how to start one (not "create a key").
          if (!databaseOf(opts.database) && opts.dataDir !== undefined && homeMissing(opts.dataDir))
            throw noHome(resolve(opts.dataDir));
          doc = await withController({ ...opts, quiet: true }, (c) =>
            doctorDocument(c, opts.repair ? { operator: operatorIdentity("berth doctor") } : null),
          );
        }
        const lines = doc.wedged.map(
          (w) =>
            `${doc.repaired ? "repaired" : "would repair"}: decision ${w.decision_id} (${w.name}) is unsettled while placement ${w.instance_id} on node ${w.node_id} records it; ${doc.repaired ? "marked" : "would mark"} it placed`,
        );
        for (const f of doc.in_flight)
          lines.push(`in flight: decision ${f.decision_id} (${f.name}, ${f.state}): ${f.owner}`);
        if (doc.wedged.length === 0) lines.push("no wedged decisions");
        else if (!doc.repaired) lines.push("run `berth doctor --repair` to mend (chained as controller.repair)");
        answer(opts.json, doc, lines.join("\n"));
      },
    );
}
