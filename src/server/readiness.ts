/**
 * `GET /readyz` (issue 13, Operable): whether this server can do what a mutating call needs — every one appends to
 * the controller chain before it acts (audit.ts), so a server that cannot write the store can only refuse. Each check
 * is real, and none writes the chain:
 *
 *   controller_chain  the controller's database is open and its chain tip reads
 *   store_writable    the store's write lock can be taken now (SQLite: BEGIN IMMEDIATE; PostgreSQL: the chain rows'
 *                     FOR UPDATE lock every append takes; both rolled back): a writer stuck holding it, a database
 *                     opened read-only or a standby fails here (SQLITE_BUSY, 55P03 lock_not_available)
 *   data_dir_writable a file can be created, synced and removed in the berth home (a read-only or full disk)
 */
import { closeSync, fsyncSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { ServerState } from "./state.js";

export interface ReadinessCheck {
  readonly name: "controller_chain" | "store_writable" | "data_dir_writable";
  readonly ok: boolean;
  /** Why it failed: an error code or berth's own sentence, never a path or a secret. */
  readonly detail: string | null;
}

/** How long the write-lock check waits for another writer (the store waits 10 s for a real write). */
const LOCK_WAIT_MS = 1000;

async function check(name: ReadinessCheck["name"], probe: () => void | Promise<void>): Promise<ReadinessCheck> {
  try {
    await probe();
    return { name, ok: true, detail: null };
  } catch (error) {
    // The error's code (EACCES, SQLITE_BUSY) where it has one: /readyz is public, and an fs message names paths.
    const e = error as { code?: unknown; message?: unknown };
    return {
      name,
      ok: false,
      detail: typeof e.code === "string" ? e.code : String(e.message ?? "failed").slice(0, 200),
    };
  }
}

export async function readiness(state: ServerState): Promise<{ ready: boolean; checks: ReadinessCheck[] }> {
  const engine = state.controller.store.engine;
  const checks = [
    await check("controller_chain", async () => {
      if (engine.closed) throw new Error("the controller database is closed");
      await state.controller.store.chain.tip();
    }),
    await check("store_writable", () => engine.checkWritable(LOCK_WAIT_MS)),
    await check("data_dir_writable", () => {
      const path = join(state.dataDir, `.readyz-${process.pid}`);
      const fd = openSync(path, "w", 0o600);
      try {
        writeSync(fd, "ready\n");
        fsyncSync(fd);
      } finally {
        closeSync(fd);
        rmSync(path, { force: true });
      }
    }),
  ];
  return { ready: checks.every((c) => c.ok), checks };
}
