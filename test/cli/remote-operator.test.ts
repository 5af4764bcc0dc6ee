/**
 * Issue 13, "every verb through a context": the operator verbs (audit, doctor, backup/restore, node rehome, k8s) with
 * real processes — a node daemon, `berth serve` on the controller's home, and `berth` as a client with only a context.
 * Each is run through the context and on the controller's files with --local, and must give the same document and
 * exit status; the verbs that must not go through a server refuse, with exit 2, before anything is done. Judged from
 * outside: documents, exit statuses, the backup file verified by `berth audit verify --db`, and the server's chain.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, requireBuild, tempDir } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { TEST_ENGINE } from "../support/test-database.js";
import { clientHome, controllerHome, run, serve } from "./remote-support.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

describe("the operator verbs through a context, side by side with the local files", () => {
  it("audit, doctor, node rehome and backup answer the same both ways; restore and reseal refuse through a server", async () => {
    requireBuild();
    const { home, env, node, controllerKey } = await controllerHome();
    const { proc, url } = await serve(home);
    const client = clientHome(home);
    expect(
      (
        await run(client.env, [
          "context",
          "add",
          "lab",
          "--server",
          url,
          "--token-file",
          client.tokenFile,
          "--use",
          "--json",
        ])
      ).code,
    ).toBe(0);
    const both = async (args: string[]) => {
      const remote = await run(client.env, [...args, "--json"]);
      const local = await run(env, [...args, "--json", "--local"]);
      return {
        remote,
        local,
        what: `berth ${args.join(" ")}: remote ${remote.stderr.slice(0, 400)} / local ${local.stderr.slice(0, 400)}`,
      };
    };
    const headOf = async () =>
      ((await run(env, ["audit", "tail", "-n", "1", "--json", "--local"])).doc.events as JsonObject[])[0] as JsonObject;

    // audit verify: the server verifies; the pinned key, an expected head and a wrong key are each answered the same.
    const first = (
      (await run(env, ["audit", "export", "--to", "0", "--json", "--local"])).doc.events as JsonObject[]
    )[0] as JsonObject;
    const verifyCases: Array<{ args: string[]; code: number; view: (d: JsonObject) => unknown }> = [
      { args: ["audit", "verify"], code: 0, view: (d) => [d.ok, d.chain_id, d.keySelfAsserted] },
      {
        args: ["audit", "verify", "--pubkey", controllerKey],
        code: 0,
        view: (d) => [d.ok, d.chain_id, d.keySelfAsserted],
      },
      {
        args: ["audit", "verify", "--pubkey", controllerKey, "--expect-head", `0:${String(first.hash)}`],
        code: 0,
        view: (d) => [d.ok, d.keySelfAsserted],
      },
      {
        args: ["audit", "verify", "--pubkey", controllerKey, "--expect-head", `0:${"0".repeat(64)}`],
        code: 1,
        view: (d) => [d.ok, (d.failure as JsonObject).code],
      },
      {
        args: ["audit", "verify", "--pubkey", "ab".repeat(32)],
        code: 1,
        view: (d) => [d.ok, (d.failure as JsonObject).code],
      },
      { args: ["audit", "tail", "--chain", "no-such-chain"], code: 2, view: (d) => [d.ok] },
      { args: ["doctor"], code: 0, view: (d) => [d.repaired, d.wedged] },
      { args: ["doctor", "--repair"], code: 0, view: (d) => [d.repaired, d.wedged] },
      {
        args: ["node", "rehome", node.nodeId, "--reason", "same store, both ways"],
        code: 0,
        view: (d) => [d.ok, d.kind, d.node, d.store_id],
      },
      {
        args: ["node", "rehome", "0123456789abcdef0123456789abcdef", "--reason", "no such node"],
        code: 1,
        view: (d) => [d.ok, d.kind],
      },
    ];
    for (const c of verifyCases) {
      const { remote, local, what } = await both(c.args);
      expect([remote.code, local.code], what).toEqual([c.code, c.code]);
      expect(c.view(remote.doc), `${what}: the same document both ways`).toEqual(c.view(local.doc));
    }
    // A head both ways: the one the chain has now (the calls above appended their api.call events).
    const head = await headOf();
    const pinned = await run(client.env, [
      "audit",
      "verify",
      "--pubkey",
      controllerKey,
      "--expect-head",
      `${head.seq}:${head.hash}`,
      "--json",
    ]);
    expect([pinned.code, pinned.doc.ok], pinned.stderr).toEqual([0, true]);

    // audit checkpoint is signed by the server's key; --key-file is refused there.
    const cp = await run(client.env, ["audit", "checkpoint", "--json"]);
    expect([cp.code, ((cp.doc.checkpoint as JsonObject).checkpoint as JsonObject).key], cp.stderr).toEqual([
      0,
      controllerKey,
    ]);
    expect(
      (await run(client.env, ["audit", "checkpoint", "--key-file", join(home, "keys", "controller.key"), "--json"])).doc
        .kind,
    ).toBe("usage");
    // export: the same bytes both ways (a closed range, so nothing appended meanwhile can differ), checkpoints too.
    for (const args of [
      ["audit", "export", "--from", "1", "--to", String(head.seq)],
      ["audit", "export", "--checkpoints"],
    ]) {
      const remote = await run(client.env, args);
      const local = await run(env, [...args, "--local"]);
      expect([remote.code, local.code], `berth ${args.join(" ")}`).toEqual([0, 0]);
      expect(remote.stdout.length, `berth ${args.join(" ")}`).toBeGreaterThan(0);
      expect(remote.stdout, `berth ${args.join(" ")}: the same lines`).toBe(local.stdout);
    }
    const tailed = await run(client.env, ["audit", "tail", "-n", "3", "--json"]);
    const events = tailed.doc.events as JsonObject[];
    expect([tailed.code, events.length, events[2]?.seq], tailed.stderr).toEqual([0, 3, Number(events[0]?.seq) + 2]);

    // Offline: the export written through the context verifies here, under the pinned key, with no server asked.
    const exported = join(tempDir("berth-remote-export-"), "chain.jsonl");
    writeFileSync(exported, (await run(client.env, ["audit", "export"])).stdout);
    const offline = await run({ ...client.env, BERTH_ADDR: "http://127.0.0.1:9", BERTH_TOKEN: "t".repeat(32) }, [
      "audit",
      "verify",
      "--file",
      exported,
      "--pubkey",
      controllerKey,
      "--json",
    ]);
    expect([offline.code, offline.doc.ok], offline.stderr).toEqual([0, true]);

    // import: a foreign chain (another home's), once through the server; the same file again on the files adds nothing.
    const other = tempDir("berth-remote-other-");
    expect((await run({ BERTH_HOME: other }, ["keys", "new"])).code).toBe(0);
    expect((await run({ BERTH_HOME: other }, ["nodes", "list", "--local", "--refresh"])).code).toBe(0); // a list that asks makes the store (a plain one reads only)
    const foreign = join(other, "foreign.jsonl");
    writeFileSync(foreign, (await run({ BERTH_HOME: other }, ["audit", "export", "--local"])).stdout);
    const imported = await run(client.env, ["audit", "import", foreign, "--json"]);
    expect([imported.code, imported.doc.ok, Number(imported.doc.written) > 0], imported.stderr).toEqual([
      0,
      true,
      true,
    ]);
    const again = await run(env, ["audit", "import", foreign, "--json", "--local"]);
    expect([again.code, again.doc.chain_id, again.doc.written], again.stderr).toEqual([0, imported.doc.chain_id, 0]);
    writeFileSync(foreign, readFileSync(foreign, "utf8").replace(/"seq":0/, '"seq":7'));
    const tampered = await both(["audit", "import", foreign]);
    expect([tampered.remote.code, tampered.local.code], tampered.what).toEqual([1, 1]);
    expect(String(tampered.remote.doc.error), tampered.what).toContain("refused, nothing written");

    // backup: the server's online backup written here, checked, and it verifies under the controller's key.
    const dir = tempDir("berth-remote-backup-");
    const backup = await run(client.env, ["backup", join(dir, "remote.db"), "--json"]);
    const local = await run(env, ["backup", join(dir, "local.db"), "--json", "--local"]);
    if (TEST_ENGINE === "sqlite") {
      expect([backup.code, (backup.doc.backups as JsonObject[]).map((b) => b.database)], backup.stderr).toEqual([
        0,
        ["controller.db"],
      ]);
      expect(
        [local.code, (local.doc.backups as JsonObject[]).map((b) => b.database), local.doc.home],
        local.stderr,
      ).toEqual([0, ["controller.db"], backup.doc.home]);
      const checked = await run(env, [
        "audit",
        "verify",
        "--db",
        join(dir, "remote.db"),
        "--pubkey",
        controllerKey,
        "--json",
      ]);
      expect([checked.code, checked.doc.ok, checked.doc.events], checked.stderr).toEqual([
        0,
        true,
        (backup.doc.backups as JsonObject[])[0]?.events,
      ]);
      expect(
        (await run(client.env, ["backup", join(dir, "remote.db"), "--json"])).code,
        "an existing FILE is not replaced without --force",
      ).toBe(2);
    } else {
      // A PostgreSQL store is the database's to back up (pg_dump), both ways, and no file is written.
      for (const r of [backup, local])
        expect([r.code, String(r.doc.error)], r.stderr).toEqual([2, expect.stringContaining("pg_dump")]);
      expect(readdirSync(dir)).toEqual([]);
    }

    // restore and reseal never go through a server; restore refuses beside a running serve even with --local.
    const before = await headOf();
    for (const args of [
      ["restore", join(dir, "remote.db")],
      ["audit", "reseal", "--new-chain", "--reason", "test"],
    ]) {
      const r = await run(client.env, [...args, "--json"]);
      expect([r.code, r.doc.kind, String(r.doc.error)], `berth ${args.join(" ")}`).toEqual([
        2,
        "usage",
        expect.stringContaining("--local"),
      ]);
    }
    const beside = await run(env, ["restore", join(dir, "remote.db"), "--json", "--local"]);
    expect([beside.code, String(beside.doc.error)], beside.stderr).toEqual([
      2,
      expect.stringContaining(TEST_ENGINE === "sqlite" ? "berth serve runs" : "pg_restore"),
    ]);
    expect((await headOf()).hash, "nothing was restored or resealed").toBe(before.hash);

    // It really went through the server: each read is a line of its log, each write an api.call in its chain.
    const served = new Set(
      proc
        .errors()
        .split("\n")
        .filter((l) => l.includes('"route"'))
        .map((l) => `${(JSON.parse(l) as JsonObject).method} ${(JSON.parse(l) as JsonObject).route}`),
    );
    for (const route of [
      "POST /api/v1/audit/verify",
      "GET /api/v1/audit/chains",
      "GET /api/v1/audit/events",
      "GET /api/v1/audit/checkpoints",
      "GET /api/v1/doctor",
    ])
      expect(served, route).toContain(route);
    const calls = ((await run(env, ["audit", "tail", "-n", "1000", "--json", "--local"])).doc.events as JsonObject[])
      .filter((e) => e.kind === "api.call" && (e.payload as JsonObject).phase === "request")
      .map((e) => String((e.payload as JsonObject).route));
    for (const route of [
      "/api/v1/doctor/repair",
      "/api/v1/nodes/{ref}/rehome",
      "/api/v1/audit/checkpoint",
      "/api/v1/audit/import",
      "/api/v1/backup",
    ])
      expect(calls, route).toContain(route);
  }, 480_000);

  it("the Kubernetes verbs go to the server's cluster, and a kubeconfig context named here is refused there", async () => {
    requireBuild();
    const home = tempDir("berth-remote-k8s-");
    expect((await run({ BERTH_HOME: home }, ["keys", "new"])).code).toBe(0);
    // Neither machine has a kubeconfig: both say so, with the same exit status and document shape.
    const { url } = await serve(home);
    const client = clientHome(home);
    expect(
      (await run(client.env, ["context", "add", "lab", "--server", url, "--token-file", client.tokenFile, "--use"]))
        .code,
    ).toBe(0);
    const args = ["k8s", "list", "--namespace", "default", "--json"];
    const remote = await run(client.env, args);
    const local = await run({ BERTH_HOME: home }, [...args, "--local"]);
    expect([remote.code, local.code, remote.doc.ok, local.doc.ok], `${remote.stderr} / ${local.stderr}`).toEqual([
      1,
      1,
      false,
      false,
    ]);
    expect(String(remote.doc.error)).toContain("context lab");
    const named = await run(client.env, [
      "k8s",
      "status",
      "--pubkey",
      "ab".repeat(32),
      "--namespace",
      "default",
      "--kube-context",
      "prod",
      "--json",
    ]);
    expect([named.code, named.doc.kind, String(named.doc.error)]).toEqual([
      2,
      "usage",
      expect.stringContaining("--local"),
    ]);
  }, 120_000);
});
