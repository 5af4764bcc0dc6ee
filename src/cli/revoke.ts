/**
 * `berth revoke KIND ID --reason R` and `berth unrevoke KIND ID --reason R` (issue 33, spec/mesh.md §7.5): the
 * controller's revocation list edited (a new generation), each subject chained, and the list pushed to every node
 * the controller knows (src/mesh/controller/revocation-push.ts). A node that does not answer gets it at its next
 * contact and is refused placements until it has it; the answer says which nodes hold it and which are behind.
 * These verbs act on this machine's berth home (the store and revocations.json), like `berth nodes add`.
 */
import { Argument, type Command } from "commander";
import { CliError } from "./errors.js";
import { controllerFlags } from "./flags.js";

const KINDS = ["package", "signer", "file", "node"] as const;

type RevokeFlags = { reason?: string; dataDir?: string; keyFile?: string; database?: string; json?: boolean };

async function revokeVerb(revoke: boolean, kind: (typeof KINDS)[number], id: string, opts: RevokeFlags): Promise<void> {
  const reason = opts.reason?.trim() ?? "";
  if (reason === "")
    throw new CliError(`--reason: say why (chained with the ${revoke ? "revocation" : "unrevocation"})`);
  if (Buffer.byteLength(reason, "utf8") > 1024) throw new CliError("--reason: at most 1024 bytes");
  const { operatorIdentity, withController } = await import("./controller.js");
  const { answer } = await import("./output.js");
  const verb = revoke ? "revoke" : "unrevoke";
  const r = await withController(opts, (c) =>
    c.revoke({ revoke, kind, id, reason, operator: operatorIdentity(`berth ${verb}`) }),
  );
  if (!r.ok) throw new CliError(`${verb}: ${r.error}`);
  const done = r.value;
  const lines = [
    `${kind} ${id}: ${revoke ? "revoked" : "no longer revoked"}${done.changed ? "" : " (already so)"}; revocation list generation ${done.generation}`,
    ...done.nodes.map((n) =>
      n.kind === "behind"
        ? `node ${n.node}  behind (holds ${n.held}): ${n.reason}; it gets the list at its next contact, and no placement goes there until then`
        : `node ${n.node}  holds generation ${n.generation}`,
    ),
  ];
  // --json prints the answer as it always has: `ok: true` beside the generation, changed and nodes.
  answer(opts.json, { ok: true, ...done }, lines.join("\n"));
}

export function registerRevokeCommands(program: Command): void {
  for (const revoke of [true, false]) {
    const name = revoke ? "revoke" : "unrevoke";
    controllerFlags(
      program
        .command(name)
        .description(
          revoke
            ? "revoke a package, signer, file or node on the controller and on every node it knows (signed, sequenced, chained per subject)"
            : "lift a revocation on the controller and on every node it knows",
        )
        .addArgument(new Argument("<kind>", "what the id names").choices(KINDS))
        .argument("<id>", "the package id, signer key, file sha256 (hex) or node id")
        .requiredOption("--reason <text>", "why (chained)"),
    ).action((kind: (typeof KINDS)[number], id: string, opts: RevokeFlags) => revokeVerb(revoke, kind, id, opts));
  }
}
