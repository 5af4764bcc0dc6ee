/**
 * The attacker of the documents beside the chain (gate summaries and candidate reports, spec/audit-chain.md §7.1):
 * someone with write access to the store drops the append-only guard (defence in depth only, §7) and edits stored
 * bodies in place, leaving the events untouched, as `audit verify` check 10 must catch.
 */
import type { StoreEngine } from "../../src/store/engine.js";

/** Replaces `from` by `to` in the stored bodies (only the one keyed `hash`, when given), on either engine. */
export async function alterStoredSummaries(
  engine: StoreEngine,
  from: string,
  to: string,
  hash?: string,
): Promise<void> {
  await engine.transaction(async (tx) => {
    await tx.exec(
      tx.kind === "sqlite"
        ? "DROP TRIGGER audit_summary_no_update"
        : "ALTER TABLE audit_summary DISABLE TRIGGER audit_summary_append_only",
    );
    if (hash === undefined) await tx.run("UPDATE audit_summary SET body = replace(body, ?, ?)", [from, to]);
    else await tx.run("UPDATE audit_summary SET body = replace(body, ?, ?) WHERE hash = ?", [from, to, hash]);
  });
}
