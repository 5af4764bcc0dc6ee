/**
 * `berth audit verify` of a controller store on PostgreSQL (issue 20): `--database postgres://…` or
 * `$BERTH_DATABASE_URL` names the store, as for every other verb. Read-only: one READ ONLY snapshot of the chain,
 * verified from genesis like a SQLite file's (links, hashes, signatures, the stored payloads' canonical form, every
 * stored checkpoint); nothing is created, so a wrong address never leaves an empty berth schema behind.
 */
import type { SignedCheckpoint } from "../core/chain/checkpoint.js";
import type { VerifyResult } from "../core/chain/verify.js";
import { verifyStoredOn } from "../chain/engine-chain.js";
import { PostgresEngine } from "../store/postgres-engine.js";
import { CliError } from "./errors.js";

export async function verifyPostgresChain(
  url: string,
  chain: string | undefined,
  opts: { key?: string; checkpoints: SignedCheckpoint[]; expectHead?: { seq: number; hash: string } },
): Promise<VerifyResult> {
  let engine: PostgresEngine;
  try {
    engine = await PostgresEngine.open(url, { poolSize: 1 });
  } catch (error) {
    // The engine names the address without its password.
    throw new CliError((error as Error).message, 2, { kind: "database" });
  }
  try {
    return await engine.read(async (q) => {
      const present = await q.get("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'audit_chain'");
      if (!present) throw new CliError(`the PostgreSQL store at ${engine.location} holds no audit chain (no audit_chain table)`);
      const chains = await q.all<{ chain_id: string; own: number }>("SELECT chain_id, own FROM audit_chain ORDER BY created_ms");
      let chainId = chain;
      if (chainId !== undefined && !chains.some((c) => c.chain_id === chainId)) throw new CliError(`chain ${chainId} is not in the store at ${engine.location}`);
      chainId ??= (chains.find((c) => Number(c.own) === 1) ?? (chains.length === 1 ? chains[0] : undefined))?.chain_id;
      if (chainId === undefined) throw new CliError(`the store at ${engine.location} holds ${chains.length} chains and none is its own; pass --chain <id>`);
      return verifyStoredOn(q, chainId, opts);
    });
  } finally {
    await engine.close();
  }
}
