/**
 * `berth node rehome NODE --reason TEXT` (issue 20): run from the controller home that should manage NODE from now
 * on. A node serves a controller key for the one store it first served and refuses every other home of the key
 * (`foreign_store`); this moves it here, explicitly, chained on the node (`controller.bind`, how `rehome`) and here
 * (`controller.rehome`). Wiring only: the verb is `MeshController.rehome` (src/mesh/controller/rehome.ts).
 */
import type { Command } from "commander";
import type { RehomeResult } from "../mesh/controller/rehome.js";
import { CliError, describeZodIssues, invalidInput, unreachableNode } from "./errors.js";
import { DATABASE_HELP } from "./flags.js";
import { answer } from "./output.js";
import { berthHome, defaultPaths } from "./paths.js";

// Built when the verb runs: zod and the controller load only then (issue 19: registration stays light).
const reasonSchema = async () =>
  (await import("zod")).z
    .string()
    .trim()
    .min(1, "must say why the node moves to this store")
    .refine((r) => Buffer.byteLength(r, "utf8") <= 1024, "must be at most 1024 bytes");

export function registerNodeRehome(node: Command): void {
  node
    .command("rehome <node>")
    .description(
      "make NODE (node id or address) serve this controller key for this store; the key's other homes are refused from then on",
    )
    .requiredOption("--reason <text>", "why (chained on both sides)")
    .option("--data-dir <dir>", "the controller home that takes the node (controller.db)", berthHome())
    .option("--database <url>", DATABASE_HELP)
    .option("--key-file <path>", "the controller's identity key", defaultPaths.controllerKey())
    .option("--local", "use this machine's files, not the current context or the `berth serve` running on this home")
    .option("--json", "print one JSON document")
    .action(
      async (
        ref: string,
        opts: { reason: string; dataDir: string; database?: string; keyFile: string; local?: boolean; json?: boolean },
        cmd: Command,
      ) => {
        const [Reason, { serverFor, askServer, failed }] = await Promise.all([
          reasonSchema(),
          import("./remote/server-verb.js"),
        ]);
        const reason = Reason.safeParse(opts.reason);
        if (!reason.success) throw invalidInput(describeZodIssues("--reason", reason.error.issues));
        const remote = await serverFor({
          local: opts.local === true,
          dataDir: opts.dataDir,
          explicitHome: cmd.getOptionValueSource("dataDir") === "cli",
        });
        let r: RehomeResult;
        if (remote) {
          // Every status carries the RehomeResult (routes/operator.ts), so it reads the same as on the files.
          const a = await askServer(remote.server, "POST", `/nodes/${encodeURIComponent(ref)}/rehome`, {
            reason: reason.data,
          });
          const kind = (a.body as { kind?: unknown } | null)?.kind;
          if (
            typeof kind !== "string" ||
            !["ok", "unknown_node", "refused", "unreachable", "indeterminate"].includes(kind)
          )
            throw failed(remote.server, a);
          r = a.body as RehomeResult;
        } else {
          const { operatorIdentity, withController } = await import("./controller.js");
          r = await withController(opts, (c) => c.rehome(ref, reason.data, operatorIdentity("berth node rehome")));
        }
        switch (r.kind) {
          case "ok": {
            const was =
              r.from_store === null
                ? "it served no store before"
                : r.from_store === r.store_id
                  ? "it already served this store"
                  : `it served store ${r.from_store} (epoch ${r.from_epoch}) before`;
            const left =
              r.instances > 0
                ? `\n${r.instances} instance(s) placed with this key stay on the node, running; the store that placed them still lists them and this one does not manage them`
                : "";
            answer(
              opts.json,
              { ok: true, ...r },
              `node ${r.node} now serves this controller key for store ${r.store_id} (epoch ${r.epoch}); ${was}${left}`,
            );
            return;
          }
          case "unknown_node":
            throw new CliError(r.reason, 1);
          case "refused":
            throw new CliError(`rehome ${r.node}: refused by the node (${r.code}: ${r.reason})`, 1, {
              details: { code: r.code },
            });
          case "unreachable":
            throw unreachableNode(`rehome ${r.node}`, `${r.reason}; nothing changed`);
          case "indeterminate":
            throw new CliError(
              `rehome ${r.node}: no valid answer (${r.reason}); the node may or may not have moved: run it again (it is idempotent)`,
              1,
            );
          default: {
            const never: never = r;
            throw new CliError(String(never), 1);
          }
        }
      },
    );
}
