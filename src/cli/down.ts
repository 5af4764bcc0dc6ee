/** `berth down`: stops what `berth up` started in this home (src/up/down.ts): agents through berth, then the nodes. */
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { answer } from "./output.js";
import { berthHome } from "./paths.js";

export function registerDownCommands(program: Command): void {
  program
    .command("down")
    .description(
      "stop what `berth up` started here (detached or in another terminal): its agents, instances placed on its nodes, then the nodes (on this machine, whatever the current context)",
    )
    .option("--data-dir <dir>", "berth home", berthHome())
    .option("--json", "one JSON document: what was stopped, and what was left with how to stop it")
    .action(async (opts: { dataDir: string; json?: boolean }) => {
      const log = (line: string) => {
        if (!opts.json) process.stdout.write(`${line}\n`);
      };
      const berthMain = fileURLToPath(new URL("./entry/main.js", import.meta.url));
      const { down } = await import("../up/down.js");
      const outcome = await down({ home: opts.dataDir, berthMain, log });
      // `berth up --local-cluster` (issue 34): its node stack goes down with the rest.
      const localCluster = (await import("../up/local-cluster.js")).stopLocalCluster(opts.dataDir, log);
      if (outcome.kind === "nothing_up") {
        answer(
          opts.json,
          {
            ok: true,
            home: outcome.home,
            was_up: localCluster,
            reason: outcome.reason,
            local_cluster_stopped: localCluster,
          },
          localCluster
            ? `the local cluster is down; ${outcome.reason} (${outcome.home})`
            : `nothing to stop: ${outcome.reason} (${outcome.home})`,
        );
        return;
      }
      const r = outcome.report;
      const left = r.left_instances.length > 0;
      const text = left
        ? `berth is partly down: ${r.kept_nodes.join(", ")} kept running for the instances listed above; stop them, then run \`berth down\` again`
        : "berth is down: no agent and no node of berth up is running";
      answer(
        opts.json,
        {
          ok: !left,
          home: outcome.home,
          was_up: true,
          foreground_up: outcome.foreground_up,
          ...r,
          local_cluster_stopped: localCluster,
        },
        text,
      );
      if (left) process.exitCode = 1;
    });
}
