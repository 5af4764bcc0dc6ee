/**
 * `berth node cordon|uncordon|forget|drain NODE --reason TEXT` (issue 16): the operator's escape hatches for a node,
 * each chained with who and why. Through the `berth serve` of this home (or the current context) when one runs, else
 * on this machine's files; the verbs are src/mesh/controller/node-admin.ts either way. Wiring only.
 */
import type { Command } from "commander";
import type { NodeAdminVerb } from "./backends/types.js";
import { describeZodIssues, invalidInput } from "./errors.js";
import { type ControllerVerbFlags, controllerFlags } from "./flags.js";
import { answer } from "./output.js";

const reasonSchema = async () =>
  (await import("zod")).z
    .string()
    .trim()
    .min(1, "must say why (it is chained with who asked)")
    .refine((r) => Buffer.byteLength(r, "utf8") <= 1024, "must be at most 1024 bytes");

const VERBS: ReadonlyArray<{ verb: NodeAdminVerb; what: string }> = [
  {
    verb: "cordon",
    what: "no new placements on NODE (node id, address or name); what runs there stays; chained as node.cordon",
  },
  { verb: "uncordon", what: "NODE takes new placements again; chained as node.uncordon" },
  {
    verb: "forget",
    what: "declare NODE dead for good: its placements and unsettled decisions are released at once (deploy its agents elsewhere; a running berth serve re-places those whose policy allows); if it ever answers again, its copies are stopped and unloaded on your authority",
  },
  {
    verb: "drain",
    what: "move every agent off live NODE, one at a time (stop, confirm stopped, place elsewhere, unload the old copy): never two copies; leaves NODE cordoned",
  },
];

type Flags = ControllerVerbFlags & { readonly reason: string };

function text(verb: NodeAdminVerb, doc: Record<string, unknown>): string {
  const node = String(doc.node);
  switch (verb) {
    case "cordon":
    case "uncordon":
      return doc.changed === true ? `node ${node}: ${verb}ed` : `node ${node}: already ${verb}ed; nothing changed`;
    case "forget": {
      const released = (doc.released as Array<{ instance_id: string; name: string }>) ?? [];
      const decisions = (doc.decisions as string[]) ?? [];
      const lines = [
        `node ${node} forgotten: ${released.length} placement(s) and ${decisions.length} unsettled decision(s) released`,
      ];
      for (const r of released) lines.push(`  ${r.name} (${r.instance_id}): free to deploy elsewhere`);
      if (released.length > 0)
        lines.push(
          "a running berth serve places them again when their restart policy allows; otherwise `berth deploy` them",
        );
      return lines.join("\n");
    }
    case "drain": {
      const steps = (doc.steps as Array<Record<string, unknown>>) ?? [];
      const lines = [
        `node ${node} drained (cordoned): ${steps.filter((s) => s.outcome === "moved").length} of ${steps.length} agent(s) moved`,
      ];
      for (const s of steps) {
        lines.push(
          s.outcome === "moved"
            ? `  ${s.name}: moved to ${s.to_instance} on node ${s.to_node} (old copy ${s.old_copy === "unloaded" ? "unloaded" : "left stopped"})`
            : `  ${s.name}: ${String(s.outcome).replace(/_/g, " ")}: ${s.reason}`,
        );
      }
      return lines.join("\n");
    }
    case "remove":
      return `node ${node} removed`;
    default: {
      const never: never = verb;
      return String(never);
    }
  }
}

export function registerNodeAdmin(node: Command): void {
  for (const { verb, what } of VERBS) {
    controllerFlags(
      node
        .command(`${verb} <node>`)
        .description(what)
        .requiredOption("--reason <text>", "why (chained with who asked)"),
    ).action(async (ref: string, opts: Flags, cmd: Command) => {
      const [Reason, { openBackend }, { backendFlags }] = await Promise.all([
        reasonSchema(),
        import("./backends/index.js"),
        import("./flags.js"),
      ]);
      const reason = Reason.safeParse(opts.reason);
      if (!reason.success) throw invalidInput(describeZodIssues("--reason", reason.error.issues));
      const doc = await (await openBackend(backendFlags(opts, cmd))).nodeAdmin(verb, ref, reason.data);
      const failed =
        verb === "drain" && ((doc.steps as Array<{ outcome: string }>) ?? []).some((s) => s.outcome !== "moved");
      answer(opts.json, doc, text(verb, doc as Record<string, unknown>));
      if (failed) process.exitCode = 1;
    });
  }
}
