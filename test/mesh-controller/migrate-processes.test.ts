/**
 * `berth migrate --from sqlite:… --to postgres://…` (issue 20) as an operator runs it: a controller deployed on SQLite
 * (real CLI processes, a real `berth node serve`), moved into a throwaway PostgreSQL 15 (test/support/postgres.ts),
 * then served from there. Judged from outside: the source read read-only (its archived file), the target in a
 * read-only session, /proc for the agent's copies, `berth audit verify` of the new store, the node's chain.
 *
 * Needs PostgreSQL: without it this tier fails naming what is missing, never skips.
 */
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/sqlite.js";
import { cleanup, MAIN, NodeProcess } from "../mesh/harness.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { type CliHome, cliHome } from "./support/cli-home.js";
import { liveInstances } from "../support/live-agents.js";
import { sharedPostgres, stopPostgres } from "./support/ha-world.js";
import { TEST_PERMIT } from "./support/package.js";

afterEach(async () => {
  killAll();
  await cleanup();
});
afterAll(async () => {
  await stopPostgres();
});

async function readOnly<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, options: "-c default_transaction_read_only=on" });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

function sqliteRows<T>(file: string, sql: string): T[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

async function ok(home: CliHome, env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
  const r = await runNode([MAIN, ...args], { env: { BERTH_HOME: home.home, ...env } });
  expect(r.code, `berth ${args.join(" ")}: ${r.stdout}${r.stderr}`).toBe(0);
  return r.stdout;
}

function agentSpec(home: CliHome, name: string): string {
  const path = join(home.home, `${name}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name },
      spec: { target: "mesh", package: "./pkg" },
    }),
  );
  return path;
}

describe("berth migrate (issue 20)", { timeout: 120_000 }, () => {
  it("moves a deployed controller into PostgreSQL whole: same store id and chain; served from there, the node accepts it and the agent is adopted, not re-placed", async () => {
    const home = await cliHome("berth-migrate-");
    const node = await NodeProcess.create({
      controllers: [home.controllerKey],
      signers: [home.signer.publicKey],
      permits: [TEST_PERMIT],
    });
    const sqlite = {};
    await ok(home, sqlite, "nodes", "add", node.address, "--tier", "paired");
    const name = `heartbeat${process.pid}`;
    await ok(home, sqlite, "deploy", agentSpec(home, name));
    const [instance] = liveInstances(name);
    expect(instance).toBeDefined();
    const db = join(home.home, "controller.db");
    const storeId = sqliteRows<{ store_id: string }>(db, "SELECT store_id FROM berth_store")[0]?.store_id as string;
    const sourceEvents = sqliteRows<{ n: number }>(db, "SELECT COUNT(*) AS n FROM audit_event")[0]?.n as number;
    const sourceEpoch = sqliteRows<{ epoch: number }>(db, "SELECT epoch FROM berth_lease_epoch")[0]?.epoch as number;

    const url = await (await sharedPostgres()).database();
    // With a password in the address (the throwaway server trusts loopback, so any password connects): it is never
    // printed and never chained.
    const withPassword = url.replace("berth@", "berth:s3cret-pw@");
    const run = await runNode(
      [
        MAIN,
        "migrate",
        "--from",
        `sqlite:${home.home}`,
        "--to",
        withPassword,
        "--reason",
        "the controller must outlive this laptop",
        "--json",
      ],
      { env: { BERTH_HOME: home.home } },
    );
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toContain("s3cret-pw");
    const moved = JSON.parse(run.stdout) as {
      ok: boolean;
      store_id: string;
      tables: Record<string, number>;
      event: { seq: number; hash: string };
      source_moved_to: string;
      to: string;
    };
    expect(moved).toMatchObject({ ok: true, store_id: storeId });
    expect(moved.tables.audit_event).toBe(sourceEvents);
    expect(moved.tables.mesh_placements).toBe(1);
    // The source is set aside, whole (read read-only), and nothing is left that a berth would open as this store.
    expect(existsSync(db)).toBe(false);
    expect(
      sqliteRows<{ store_id: string }>(moved.source_moved_to, "SELECT store_id FROM berth_store")[0]?.store_id,
    ).toBe(storeId);

    // The target, read-only: the same store id, every event plus the move, signed and with who and why.
    expect((await readOnly<{ store_id: string }>(url, "SELECT store_id FROM berth_store"))[0]?.store_id).toBe(storeId);
    expect(Number((await readOnly<{ epoch: string }>(url, "SELECT epoch FROM berth_lease_epoch"))[0]?.epoch)).toBe(
      sourceEpoch,
    );
    const [last] = await readOnly<{ seq: string; kind: string; payload: string }>(
      url,
      "SELECT seq, kind, payload FROM audit_event ORDER BY seq DESC LIMIT 1",
    );
    expect([Number(last?.seq), last?.kind]).toEqual([sourceEvents, "controller.migrate"]);
    const payload = JSON.parse(last?.payload as string) as Record<string, unknown>;
    expect(payload).toMatchObject({
      store_id: storeId,
      reason: "the controller must outlive this laptop",
      operator: { via: "berth migrate" },
    });
    expect(JSON.stringify(payload)).not.toContain("s3cret-pw");
    expect(payload.to).toBe(withPassword.replace("s3cret-pw", "***"));
    const pgEnv = { BERTH_DATABASE_URL: url, BERTH_LEADER_TTL_MS: "2000" };
    const verified = JSON.parse(
      await ok(home, pgEnv, "audit", "verify", "--key-file", join(home.home, "keys", "controller.key"), "--json"),
    ) as { ok: boolean; events: number };
    expect(verified).toMatchObject({ ok: true, events: sourceEvents + 1 });

    // Served from PostgreSQL: the same node answers the migrated store (no foreign_store), the agent is the one that
    // ran before (adopted, not placed again), and the new leader's epoch is above everything the node saw.
    const server = spawnNode([MAIN, "serve", "--port", "0", "--json", "--log-level", "warn"], {
      env: { BERTH_HOME: home.home, ...pgEnv },
    });
    await server.waitForOutput(/\n/, 30_000);
    expect(await ok(home, pgEnv, "deploy", agentSpec(home, name))).toMatch(/is running as .* nothing to do/);
    expect(liveInstances(name)).toEqual([instance]);
    const second = `${name}b`;
    await ok(home, pgEnv, "deploy", agentSpec(home, second));
    expect(liveInstances(second)).toHaveLength(1);
    expect(node.events({ kind: "workload.refuse" }).filter((e) => e.payload.code === "foreign_store")).toEqual([]);
    const epochs = node.events({ kind: "controller.epoch" }).map((e) => Number(e.payload.to));
    expect(Math.max(...epochs)).toBeGreaterThan(sourceEpoch);
    expect(node.events({ kind: "controller.bind" })).toHaveLength(1);
    const placements = await readOnly<{ name: string; instance_id: string }>(
      url,
      "SELECT name, instance_id FROM mesh_placements ORDER BY name",
    );
    expect(placements).toEqual([
      { name, instance_id: instance },
      { name: second, instance_id: liveInstances(second)[0] },
    ]);

    server.child.kill("SIGTERM");
    await server.exited();

    // The old home without PostgreSQL is a new, empty store now (another store id): the node refuses it.
    await ok(home, {}, "nodes", "add", node.address, "--tier", "paired");
    const stray = await runNode([MAIN, "place", home.pkgDir, "--name", `${name}c`], { env: { BERTH_HOME: home.home } });
    expect(stray.code).not.toBe(0);
    expect(stray.stdout + stray.stderr).toMatch(/foreign_store/);
    expect(liveInstances(`${name}c`)).toEqual([]);
    expect(node.verifyChain().ok).toBe(true);
    expect(
      JSON.parse(
        await ok(home, pgEnv, "audit", "verify", "--key-file", join(home.home, "keys", "controller.key"), "--json"),
      ).ok,
    ).toBe(true);

    // And the verifier can say no: one byte of a stored payload changed behind berth's back fails it at that seq.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query("ALTER TABLE audit_event DISABLE TRIGGER USER");
      await admin.query("UPDATE audit_event SET payload = replace(payload, $1, $2) WHERE seq = $3", [
        "the controller must outlive",
        "the controller must outlivE",
        sourceEvents,
      ]);
    } finally {
      await admin.end();
    }
    const broken = await runNode(
      [MAIN, "audit", "verify", "--key-file", join(home.home, "keys", "controller.key"), "--json"],
      { env: { BERTH_HOME: home.home, ...pgEnv } },
    );
    expect(broken.code).toBe(1);
    expect(JSON.parse(broken.stdout)).toMatchObject({ ok: false, failure: { seq: sourceEvents } });
  });

  it("refuses a target that already holds a store, a source held by a live berth serve (named), and bad flags; nothing is written", async () => {
    const home = await cliHome("berth-migrate-refuse-");
    await ok(home, {}, "nodes", "list"); // makes the store
    const url = await (await sharedPostgres()).database();
    const key = join(home.home, "keys", "controller.key");
    const migrate = (...extra: string[]) =>
      runNode([MAIN, "migrate", "--from", `sqlite:${home.home}`, "--key-file", key, "--reason", "test", ...extra], {
        env: { BERTH_HOME: home.home },
      });

    // Bad flags name the field (exit 2).
    const noTarget = await migrate();
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toMatch(/--to/);
    const notPostgres = await migrate("--to", "mysql://x@h/db");
    expect(notPostgres.code).toBe(2);
    expect(notPostgres.stderr).toMatch(/--to.*postgres:\/\//);
    const badSource = await runNode([MAIN, "migrate", "--from", home.home, "--to", url, "--reason", "x"], {
      env: { BERTH_HOME: home.home },
    });
    expect([badSource.code, /--from.*sqlite:PATH/.test(badSource.stderr)]).toEqual([2, true]);

    // A live berth serve on the source: refused with its pid; the target stays empty.
    const server = spawnNode([MAIN, "serve", "--port", "0", "--json", "--log-level", "warn"], {
      env: { BERTH_HOME: home.home },
    });
    await server.waitForOutput(/\n/, 30_000);
    const held = await migrate("--to", url);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain(`pid ${server.child.pid}`);
    expect(held.stderr).toMatch(/in use by the leader/);
    expect(await readOnly(url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")).toEqual([]);
    server.child.kill("SIGTERM");
    await server.exited();

    // Into a database that holds a store already: refused naming what it holds; neither side changes.
    const other = await cliHome("berth-migrate-other-");
    await ok(other, {}, "nodes", "list", "--refresh"); // a list that asks makes the home's store (a plain one reads only)
    const first = await runNode(
      [MAIN, "migrate", "--from", `sqlite:${other.home}`, "--to", url, "--reason", "first", "--json"],
      { env: { BERTH_HOME: other.home } },
    );
    expect(first.code, first.stderr).toBe(0);
    const eventsBefore = await readOnly<{ n: string }>(url, "SELECT COUNT(*) AS n FROM audit_event");
    const again = await migrate("--to", url);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/the target database is not empty: it holds .*berth_store \(1 row\)/);
    expect(await readOnly<{ n: string }>(url, "SELECT COUNT(*) AS n FROM audit_event")).toEqual(eventsBefore);
    expect(existsSync(join(home.home, "controller.db"))).toBe(true);
    expect(readdirSync(home.home).filter((f) => f.includes("migrated"))).toEqual([]);
  });
});
