/**
 * `berth backup` / `berth restore` (issue 13): a backup taken while another process keeps appending to the chain holds
 * every event committed before it began, and its chain verifies (a plain `cp` of the live file lost the events still
 * in the WAL); a restore puts it back, keeps what it replaced, and refuses while berth up runs in the home.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { identityOf, writeUpState } from "../../src/up/up-state.js";
import { berthBin, builtPath } from "../support/built.js";
import { killAll, runNode, spawnNode } from "../support/process.js";

const work = mkdtempSync(join(tmpdir(), "berth-backup-"));
const home = join(work, "home");
const keyFile = join(home, "keys", "controller.key");
saveKeyFile(keyFile, generateSigningKey());
afterEach(() => killAll());
afterAll(() => rmSync(work, { recursive: true, force: true }));

const berth = (...args: string[]) => runNode([berthBin(), ...args], { env: { BERTH_HOME: home } });

interface Verified {
  ok: boolean;
  events: number;
  head: { seq: number; hash: string } | null;
}

async function verify(db: string): Promise<Verified> {
  const r = await berth("audit", "verify", "--db", db, "--key-file", keyFile, "--json");
  return JSON.parse(r.stdout) as Verified;
}

/** The seqs a writer has printed so far: each one is an event it had committed when it printed it. */
const committedSeqs = (output: string) =>
  output
    .split("\n")
    .filter((l) => /^\d+$/.test(l))
    .map(Number);

async function waitUntil(cond: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("berth backup and restore", () => {
  const file = join(work, "backup.db");

  it("a backup taken while another process appends holds every event committed before it began, and verifies", async () => {
    const writer = spawnNode([builtPath("test/up/support/chain-appender.js"), join(home, "controller.db"), keyFile]);
    await waitUntil(() => committedSeqs(writer.output()).length >= 300, "300 committed events");
    const committedBefore = Math.max(...committedSeqs(writer.output()));
    const backup = await berth("backup", file, "--data-dir", home, "--json");
    const committedAfter = Math.max(...committedSeqs(writer.output()));
    writer.child.kill("SIGTERM");
    await writer.exited();
    expect(backup.code, backup.stderr || backup.stdout).toBe(0);
    const doc = JSON.parse(backup.stdout) as {
      backups: Array<{ database: string; events: number; head: { seq: number } }>;
    };
    expect(doc.backups.map((b) => b.database)).toEqual(["controller.db"]);

    const verified = await verify(file);
    expect(verified.ok, JSON.stringify(verified)).toBe(true);
    // Every event committed before the backup began is in it (seq 0 is the genesis), and it is one prefix of the chain.
    expect(verified.head?.seq).toBeGreaterThanOrEqual(committedBefore);
    expect(verified.events).toBe((verified.head?.seq ?? -1) + 1);
    expect(doc.backups[0]?.head.seq).toBe(verified.head?.seq);
    // The writer kept writing while the backup ran (or at least up to it): the backup is a snapshot, not the end.
    expect(committedAfter).toBeGreaterThanOrEqual(committedBefore);
  }, 180_000);

  it("does not overwrite an existing backup file unless asked to", async () => {
    const again = await berth("backup", file, "--data-dir", home);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("already exists");
    const forced = await berth("backup", file, "--data-dir", home, "--force");
    expect(forced.code, forced.stderr).toBe(0);
  });

  it("backs up k8s.db beside the controller's when the home has one", async () => {
    const k8s = new Database(join(home, "k8s.db"));
    k8s.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
    k8s.close();
    const r = await berth("backup", join(work, "both.db"), "--data-dir", home, "--json");
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { backups: Array<{ file: string }> }).backups.map((b) => b.file)).toEqual([
      join(work, "both.db"),
      join(work, "both.k8s.db"),
    ]);
    const copy = new Database(join(work, "both.k8s.db"), { readonly: true });
    expect(copy.prepare("SELECT x FROM t").get()).toEqual({ x: 1 });
    copy.close();
  });

  it("restores a backup into a home, keeping the database it replaces", async () => {
    const target = join(work, "restored");
    const first = await runNode([berthBin(), "restore", file, "--data-dir", target, "--json"]);
    expect(first.code, first.stderr).toBe(0);
    const backedUp = await verify(file);
    const restored = await verify(join(target, "controller.db"));
    expect(restored).toMatchObject({ ok: true, events: backedUp.events, head: backedUp.head });

    const second = await runNode([berthBin(), "restore", file, "--data-dir", target, "--json"]);
    expect(second.code, second.stderr).toBe(0);
    const previous = (JSON.parse(second.stdout) as { restored: Array<{ previous: string | null }> }).restored[0]
      ?.previous;
    expect(previous && existsSync(previous)).toBe(true);
    expect((await verify(previous as string)).head).toEqual(backedUp.head);
  });

  it("refuses to restore while berth up runs in the home", async () => {
    const target = join(work, "busy");
    // This test's own process stands in for a foreground berth up (a live process with its recorded identity).
    writeUpState(target, { nodes: [], agents: [], up: identityOf(process.pid) ?? null, detached: false });
    const r = await runNode([berthBin(), "restore", file, "--data-dir", target]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("berth down");
    expect(existsSync(join(target, "controller.db"))).toBe(false);
  });
});
