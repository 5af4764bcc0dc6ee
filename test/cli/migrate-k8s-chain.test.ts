/**
 * `berth migrate` and a home's own Kubernetes chain (issue 20): `k8s.db` is another owner's chain (role `k8s`, its
 * own key), not part of the controller store, so the move leaves it where it is and says so, with the two commands
 * that verify it and carry a verified copy into the new store. Both commands are run here as printed.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openK8sChain } from "../../src/kubernetes/audit.js";
import { builtPath } from "../support/built.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { runNode } from "../support/process.js";

const MAIN = builtPath("src/cli/entry/main.js");
let pg: TestPostgres | null = null;
afterAll(async () => {
  await pg?.stop();
});

describe("berth migrate with a k8s.db in the home", { timeout: 120_000 }, () => {
  it("leaves k8s.db as it is, names it, and the printed verify and carry commands work: a verified foreign copy in the store", async () => {
    const home = mkdtempSync(join(tmpdir(), "berth-migrate-k8s-"));
    const berth = async (args: string[], env: Record<string, string> = {}) => {
      const r = await runNode([MAIN, ...args], { cwd: home, env: { BERTH_HOME: home, HOME: home, ...env } });
      return r;
    };
    expect((await berth(["keys", "new", "--json"])).code).toBe(0);
    // A list that asks the nodes opens the controller, which makes its store (issue 35: a plain list reads, makes nothing).
    expect((await berth(["instances", "--refresh", "--json"])).code, "a controller store in the home").toBe(0);
    const audit = openK8sChain(home);
    const pair = await audit.intent("k8s.pod.create", { object: "buzz-agent-000000000001", fence: { kind: "absent" } });
    await audit.result(pair, "k8s.pod.create", { object: "buzz-agent-000000000001", outcome: "Created" });
    await audit.record("k8s.alert", { phase: "alert", agent: "scout", reason: "crash-loop", why: "restarted 5 times" });
    await audit.close();

    pg = await startPostgres();
    const url = await pg.database();
    const moved = await berth(["migrate", "--from", `sqlite:${home}`, "--to", url, "--reason", "one truth", "--json"]);
    expect(moved.code, moved.stdout + moved.stderr).toBe(0);
    const doc = JSON.parse(moved.stdout) as { k8s_chain_left: { path: string; verify: string; carry: string } | null };
    const k8sDb = join(home, "k8s.db");
    const k8sKey = join(home, "keys", "k8s.key");
    expect(doc.k8s_chain_left).toEqual({
      path: k8sDb,
      verify: `berth audit verify --db ${k8sDb} --key-file ${k8sKey}`,
      carry: `berth audit export --db ${k8sDb} > k8s.jsonl && berth audit import k8s.jsonl --key-file ${k8sKey} --database ${url}`,
    });
    expect(existsSync(k8sDb), "left where it is").toBe(true);
    const human = await berth(["audit", "verify", "--db", k8sDb, "--key-file", k8sKey, "--json"]);
    expect(human.code, human.stdout + human.stderr).toBe(0);
    const own = JSON.parse(human.stdout) as { ok: boolean; chain_id: string; events: number };
    expect([own.ok, own.events]).toEqual([true, 4]);

    // The carry, as printed: export, then import as a verified foreign copy into the PostgreSQL store.
    const exported = await berth(["audit", "export", "--db", k8sDb]);
    expect(exported.code, exported.stderr).toBe(0);
    const file = join(home, "k8s.jsonl");
    writeFileSync(file, exported.stdout);
    const imported = await berth(["audit", "import", file, "--key-file", k8sKey, "--database", url, "--json"]);
    expect(imported.code, imported.stdout + imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ ok: true, chain_id: own.chain_id, written: 4 });
    const copy = await berth([
      "audit",
      "verify",
      "--database",
      url,
      "--chain",
      own.chain_id,
      "--key-file",
      k8sKey,
      "--json",
    ]);
    expect(copy.code, copy.stdout + copy.stderr).toBe(0);
    expect(JSON.parse(copy.stdout)).toMatchObject({ ok: true, chain_id: own.chain_id, events: 4 });
    // The store's own chain is still the controller's, under the controller key.
    const store = await berth([
      "audit",
      "verify",
      "--database",
      url,
      "--key-file",
      join(home, "keys", "controller.key"),
      "--json",
    ]);
    expect(store.code, store.stdout + store.stderr).toBe(0);
    expect((JSON.parse(store.stdout) as { chain_id: string }).chain_id).not.toBe(own.chain_id);
  });
});
