/**
 * `--database` / `$BERTH_DATABASE_URL` (issue 20) from outside: the built `berth` keeps the controller's state in a
 * real PostgreSQL (a throwaway server, test/support/postgres.ts), creates no SQLite file in the home, and never prints
 * or chains the password in the address.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineChain } from "../../src/chain/engine-chain.js";
import { loadKeyFile } from "../../src/keys/key-file.js";
import { CONTROLLER_SCHEMA_VERSION } from "../../src/mesh/controller/store-schema.js";
import { PostgresEngine } from "../../src/store/postgres-engine.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { berth, oneDocument, removeHomes, tempHome } from "./support.js";

const SECRET = "s3cret-pw-9f2c";
let pg: TestPostgres;
beforeAll(async () => {
  pg = await startPostgres();
}, 120_000);
afterAll(async () => {
  removeHomes();
  await pg?.stop();
});

/** The test server trusts loopback, so a password in the address is accepted and ignored: it must still never show. */
const withPassword = (url: string) => url.replace("postgres://berth@", `postgres://berth:${SECRET}@`);

/**
 * Issue 33 item 8: an address with a password is never a command-line argument (every user reads /proc/PID/cmdline);
 * it is given as `--database @FILE`, a file of mode 0600 holding it.
 */
function addressFile(h: string, url: string): string {
  const path = join(h, `database-${Math.random().toString(36).slice(2)}.url`);
  writeFileSync(path, `${url}\n`, { mode: 0o600 });
  return `@${path}`;
}

async function home(): Promise<string> {
  const h = tempHome();
  expect((await berth(h, ["keys", "new"])).code).toBe(0);
  return h;
}

describe("the controller's store chosen by --database (issue 20)", () => {
  it("keeps every verb's state in PostgreSQL, chained and verifying there, with no controller.db in the home", async () => {
    const h = await home();
    const url = withPassword(await pg.database());
    const byFlag = await berth(h, ["instances", "--database", addressFile(h, url), "--json"]);
    expect(byFlag.code, byFlag.stderr).toBe(0);
    expect(oneDocument(byFlag, "instances")).toEqual({ placements: [], moved: [] });
    const byEnv = await berth(h, ["doctor", "--json"], { BERTH_DATABASE_URL: url });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect(oneDocument(byEnv, "doctor")).toMatchObject({ wedged: [], in_flight: [] });
    expect(existsSync(join(h, "controller.db")), "no SQLite store beside a PostgreSQL one").toBe(false);
    for (const r of [byFlag, byEnv]) expect(r.stdout + r.stderr).not.toContain(SECRET);

    // berth audit reads the chain where it lives: the same verification on PostgreSQL (src/chain/mirror.ts).
    const verified = await berth(h, [
      "audit",
      "verify",
      "--database",
      addressFile(h, url),
      "--key-file",
      join(h, "keys", "controller.key"),
      "--json",
    ]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(oneDocument(verified, "audit verify")).toMatchObject({ ok: true });
    const tail = await berth(h, ["audit", "tail", "--json"], { BERTH_DATABASE_URL: url });
    expect(tail.code, tail.stderr).toBe(0);
    // The verbs that write a chain: a checkpoint and an import on PostgreSQL; a reseal refused, saying why.
    const checkpoint = await berth(h, ["audit", "checkpoint", "--database", addressFile(h, url), "--json"]);
    expect(checkpoint.code, checkpoint.stderr).toBe(0);
    // A checkpoint of the head, or null when the head is checkpointed already (the verbs above may have closed with one).
    expect(oneDocument(checkpoint, "audit checkpoint")).toHaveProperty("checkpoint");
    const other = await home();
    // A list that asks the nodes opens the controller, which makes the home's store and chain (issue 35: a plain list makes none).
    expect((await berth(other, ["instances", "--refresh"])).code).toBe(0);
    const exported = await berth(other, ["audit", "export"]);
    expect(exported.code, exported.stderr).toBe(0);
    writeFileSync(join(h, "other.jsonl"), exported.stdout);
    const imported = await berth(h, [
      "audit",
      "import",
      join(h, "other.jsonl"),
      "--database",
      addressFile(h, url),
      "--json",
    ]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(oneDocument(imported, "audit import")).toMatchObject({
      ok: true,
      written: exported.stdout.trim().split("\n").length,
    });
    const again = await berth(h, [
      "audit",
      "import",
      join(h, "other.jsonl"),
      "--database",
      addressFile(h, url),
      "--json",
    ]);
    expect(oneDocument(again, "audit import")).toMatchObject({ ok: true, written: 0 });
    const reseal = await berth(h, [
      "audit",
      "reseal",
      "--new-chain",
      "--reason",
      "x",
      "--database",
      addressFile(h, url),
    ]);
    expect(reseal.code).toBe(1);
    expect(reseal.stderr).toMatch(
      /refused on a PostgreSQL store: it abandons the chain every berth serve on the store appends to/,
    );
    for (const r of [verified, tail, checkpoint, imported, reseal]) expect(r.stdout + r.stderr).not.toContain(SECRET);

    const engine = await PostgresEngine.open(url);
    try {
      const chain = await EngineChain.open(engine, loadKeyFile(join(h, "keys", "controller.key")), "controller");
      expect((await chain.verifyStored()).ok).toBe(true);
      const rows = await engine.read((q) => q.all<{ payload: string }>("SELECT payload FROM audit_event"));
      expect(rows.length).toBeGreaterThan(0);
      expect(
        rows.some((r) => r.payload.includes(SECRET)),
        "the password is in no chained event",
      ).toBe(false);
      expect(
        await engine.read((q) =>
          q.get<{ version: number }>("SELECT version FROM berth_schema WHERE component = 'mesh_controller'"),
        ),
      ).toEqual({ version: CONTROLLER_SCHEMA_VERSION });
      expect(engine.location).not.toContain(SECRET);
    } finally {
      await engine.close();
    }
  });

  it("a store that cannot be reached fails the verb naming the address without its password", async () => {
    const h = await home();
    const r = await berth(h, [
      "nodes",
      "list",
      "--database",
      addressFile(h, `postgres://berth:${SECRET}@127.0.0.1:1/nowhere`),
    ]);
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.stderr).toContain("cannot open the PostgreSQL store at postgres://berth:***@127.0.0.1:1/nowhere");
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  });

  it("an address that is neither postgres:// nor sqlite: is a usage error naming the flag or the variable (exit 2)", async () => {
    const h = await home();
    const flag = await berth(h, ["instances", "--database", `mysql://root:${SECRET}@db/x`]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--database: expected postgres:\/\/… or sqlite:PATH/);
    const env = await berth(h, ["instances"], { BERTH_DATABASE_URL: "nonsense" });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain("BERTH_DATABASE_URL: expected postgres://… or sqlite:PATH");
    expect(flag.stderr + env.stderr).not.toContain(SECRET);
  });
});
