/**
 * The Merkle verbs of `berth audit` (issue 38), offline on this machine's files: `prove SEQ` (an inclusion proof of
 * one event against the current head), `consistency --old FILE` (the consistency proof from an exported checkpoint to
 * the current head), and the helpers `checkpoint --export` and `verify --against FILE` use (audit.ts).
 *
 * They read the chain through the same `--data-dir` / `--db` / `--database` as the other audit verbs, verify it first
 * (links, hashes, signatures), and never ask a server: a proof is only worth what the verifier computed itself.
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import type { ChainTreeView } from "../core/chain/tree-checkpoint.js";
import type { VerifyResult } from "../core/chain/verify.js";
import type { Db } from "../store/sqlite.js";
import type * as AuditDeps from "./audit-deps.js";
import { CliError, describeZodIssues, invalidInput } from "./errors.js";
import { answer } from "./output.js";
import { berthHome } from "./paths.js";
import { stdoutPalette } from "./style.js";

export interface MerkleHelpers {
  load(): Promise<typeof AuditDeps>;
  openForReading(opts: { db?: string; dataDir?: string; database?: string }): Promise<Db>;
  pickChain(db: Db, chain: string | undefined): string;
  pinnedKey(opts: { pubkey?: string; key?: string; keyFile?: string }): string | undefined;
}

interface ReadOpts {
  db?: string;
  dataDir?: string;
  database?: string;
  chain?: string;
  pubkey?: string;
  keyFile?: string;
}

/**
 * Runs `use` on the stored chain's tree of the events the whole chain verified through (links, hashes, signatures
 * under the pinned key, and the stored Merkle tree against the events: §8 checks 11–12), read from the stored tree.
 */
async function withVerifiedTree<T>(
  h: MerkleHelpers,
  d: typeof AuditDeps,
  opts: ReadOpts,
  use: (tree: ChainTreeView, ownerKey: string) => T,
): Promise<T> {
  const key = h.pinnedKey(opts);
  const db = await h.openForReading(opts);
  try {
    const chainId = h.pickChain(db, opts.chain);
    const result = d.verifyStoredChain(db, chainId, key ? { key } : {});
    if (!result.ok || !result.head) {
      const f = result.failure;
      throw new CliError(
        `chain ${chainId} does not verify at seq ${f?.seq} (${f?.code}: ${f?.detail}); no proof is built over a broken chain (berth audit verify)`,
        1,
      );
    }
    // Only the events the verifier walked: a writer may have appended since.
    return use(d.storedTreeView(db, chainId, result.head.seq + 1), key ?? d.ownerKeyOf(db, chainId)!);
  } finally {
    db.close();
  }
}

/** Reads and opens an exported checkpoint note under the owner key; a bad file is a usage error naming it. */
export function readCheckpointNote(
  d: typeof AuditDeps,
  file: string,
  ownerKey: string,
): import("../core/chain/note.js").TreeCheckpoint {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new CliError(
      `checkpoint file ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  const opened = d.openCheckpointNote(text, ownerKey);
  if (!opened.ok) throw new CliError(`checkpoint file ${file} is refused: ${opened.error}`, 1, { kind: "refused" });
  return opened.value;
}

/**
 * `verify --against FILE` after the chain itself verified: the result fails (code checkpoint, truncated or fork) unless
 * the chain's events extend the exported tree.
 */
export function againstCheckpoint(
  d: typeof AuditDeps,
  result: VerifyResult,
  tree: ChainTreeView,
  ownerKey: string,
  file: string,
): VerifyResult & { against?: unknown } {
  if (!result.ok || result.chain_id === null) return result;
  const cp = readCheckpointNote(d, file, ownerKey);
  const outcome = d.checkExtends(tree, cp);
  if (outcome.ok)
    return { ...result, against: { file, tree_size: cp.size, root: cp.root.toString("base64"), proof: outcome.value } };
  const failed = outcome.error;
  return {
    ...result,
    ok: false,
    failure: { seq: failed.seq, code: failed.code, detail: `${file}: ${failed.detail}` },
  };
}

/**
 * `verify --proof FILE`: a proof document (GET /api/v1/audit/proof/…) checked here with nothing but the pinned key:
 * its notes must be signed by that key and its proof must lead to their roots. Exit 1 naming the field at fault.
 */
export function verifyProofFile(d: typeof AuditDeps, file: string, key: string | undefined, json: boolean): void {
  if (key === undefined)
    throw new CliError("--proof needs --pubkey or --key-file: a proof is worth only the key it is checked under");
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new CliError(
      `proof file ${file} cannot be read as JSON: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  const r = d.checkProofDocument(doc, key);
  const out = stdoutPalette(json);
  if (json)
    answer(
      true,
      r.ok
        ? { ok: true, kind: r.value.kind, origin: r.value.origin, summary: r.value.summary }
        : { ok: false, error: r.error },
      "",
    );
  else
    process.stdout.write(
      r.ok
        ? `ok ${r.value.kind} ${r.value.origin}: ${r.value.summary}\n`
        : `${out.red("FAIL")} proof ${file}: ${r.error}\n`,
    );
  process.exitCode = r.ok ? 0 : 1;
}

const JSON_OPT = "print one JSON document (the answer is JSON either way; this keeps every verb's --json)";

export function registerMerkleCommands(audit: Command, h: MerkleHelpers): void {
  audit
    .command("prove")
    .description(
      "print an inclusion proof (RFC 9162) of the event at SEQ against the current head, as JSON; offline, on this machine's chain",
    )
    .argument("<seq>", "the event's sequence number")
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option("--db <path>", "a berth database file (instead of --data-dir)")
    .option(
      "--database <url>",
      "the controller store on PostgreSQL: postgres://… (default $BERTH_DATABASE_URL; --db wins)",
    )
    .option("--chain <id>", "which chain (default: its own)")
    .option("--pubkey <hex>", "the owner's public key the chain must verify under (64 hex)")
    .option("--key-file <path>", "pin the public key of this key file")
    .option("--json", JSON_OPT)
    .action(async (seqText: string, opts: ReadOpts & { json?: boolean }) => {
      const d = await h.load();
      const seq = d.z.coerce.number().int().min(0).safeParse(seqText);
      if (!seq.success) throw invalidInput(describeZodIssues("SEQ", seq.error.issues));
      const doc = await withVerifiedTree(h, d, opts, (tree) => d.proveEvent(tree, seq.data));
      if (!doc.ok) throw new CliError(doc.error, 1, { kind: "refused" });
      answer(true, doc.value, "");
    });

  audit
    .command("consistency")
    .description(
      "prove that the current chain extends a checkpoint exported earlier (berth audit checkpoint --export); prints the RFC 9162 consistency proof as JSON, exits 1 if it does not",
    )
    .requiredOption("--old <file>", "the exported checkpoint note")
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option("--db <path>", "a berth database file (instead of --data-dir)")
    .option(
      "--database <url>",
      "the controller store on PostgreSQL: postgres://… (default $BERTH_DATABASE_URL; --db wins)",
    )
    .option("--chain <id>", "which chain (default: its own)")
    .option("--pubkey <hex>", "the owner's public key (64 hex): the chain and the checkpoint must be signed by it")
    .option("--key-file <path>", "pin the public key of this key file")
    .option("--json", JSON_OPT)
    .action(async (opts: ReadOpts & { old: string; json?: boolean }) => {
      const d = await h.load();
      const { chainId, outcome } = await withVerifiedTree(h, d, opts, (tree, ownerKey) => ({
        chainId: tree.chainId,
        outcome: d.checkExtends(tree, readCheckpointNote(d, opts.old, ownerKey)),
      }));
      if (outcome.ok) {
        answer(true, { ok: true, ...outcome.value }, "");
        return;
      }
      const failed = outcome.error;
      const out = stdoutPalette(Boolean(opts.json));
      if (opts.json) answer(true, { ok: false, error: failed.detail, code: failed.code, ...(failed.proof ?? {}) }, "");
      else process.stdout.write(`${out.red("FAIL")} chain ${chainId} ${failed.code}: ${failed.detail}\n`);
      process.exitCode = 1;
    });
}
