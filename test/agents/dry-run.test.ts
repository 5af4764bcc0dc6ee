/**
 * `berth deploy --dry-run` on the mesh (issue 36), with a real node daemon and a real `berth serve`: the plan names
 * the row and the action a deploy would take and, when it would place, the node and the engine's explain; and it
 * changes nothing. Judged from outside: the controller store read with a read-only connection (the chain, every
 * table a deploy writes: decisions, placements, the agent registry, attempts …), the package store's files, and the
 * node's own chain and processes. A dry run describes the nodes and asks their status exactly as `berth agents` does,
 * which keeps the same liveness bookkeeping (mesh_targets contacts, the owner and lease rows, watch stamps); those
 * tables are the only ones left out of the comparison, and a read writes them too.
 */
import { createHash } from "node:crypto";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { clientHome, controllerHome, run, serve } from "../cli/remote-support.js";
import { cleanup, requireBuild } from "../mesh/harness.js";
import { killAll } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

/** Liveness bookkeeping every read keeps (see the header); everything else must be byte-for-byte the same. */
const BOOKKEEPING = new Set(["mesh_targets", "berth_lease_epoch", "berth_owners", "mesh_watch_sends"]);
/**
 * A running server also renews its leadership lease (berth_leader) and records what its nodes report of each instance
 * (mesh_observations, issue 35) on its own tick. A plan through the CLI alone records neither (judged above).
 */
const SERVER_TICK = new Set(["berth_leader", "mesh_observations"]);
const withoutLease = (image: ReturnType<typeof storeImage>) => ({
  ...image,
  tables: Object.fromEntries(Object.entries(image.tables).filter(([name]) => !SERVER_TICK.has(name))),
});

function storeImage(home: string): { tables: Record<string, string>; chain: number; packages: string[] } {
  const db = new Database(join(home, "controller.db"), { readonly: true });
  try {
    const tables: Record<string, string> = {};
    for (const { name } of db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all() as Array<{ name: string }>) {
      if (BOOKKEEPING.has(name)) continue;
      tables[name] = createHash("sha256")
        .update(JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).raw().all()))
        .digest("hex");
    }
    const chain = (db.prepare("SELECT count(*) AS n FROM audit_event").get() as { n: number }).n;
    return { tables, chain, packages: readdirSync(join(home, "packages")).sort() };
  } finally {
    db.close();
  }
}

function specFor(home: string, name: string): string {
  const path = join(home, `${name}.yaml`);
  writeFileSync(
    path,
    `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: ${name} }\nspec:\n  target: mesh\n  package: ./pkg\n`,
  );
  return path;
}

describe("berth deploy --dry-run on the mesh", { timeout: 120_000 }, () => {
  it("says which row and action a deploy would take, and where it would place and why, and changes nothing, locally and through a server", async () => {
    requireBuild();
    const { home, env, spec, node } = await controllerHome();
    // What a deploy does on a node is a workload.* event there (place, load, start, stop, unload); a server beside it
    // also has the node chain its own lease and revocation business, which is not the plan's.
    const workloadEvents = () => node.events().filter((e) => e.kind.startsWith("workload.")).length;
    const nodeEvents = workloadEvents();
    const pids = node.instancePids();
    const before = storeImage(home);

    // The agent deployed runs this very spec: a deploy would do nothing.
    const same = await run(env, ["deploy", spec, "--dry-run", "--json"]);
    expect(same.code, same.stderr).toBe(0);
    expect([same.doc.dry_run, same.doc.target, same.doc.row, same.doc.action, same.doc.placement]).toEqual([
      true,
      "mesh",
      "started",
      "no-op",
      null,
    ]);
    expect(String(same.doc.message)).toContain("nothing was done (dry run)");

    // A new agent: the deploy would place it, on the one node, and the plan carries the engine's explain.
    const fresh = specFor(home, "ranger");
    const planned = await run(env, ["deploy", fresh, "--dry-run", "--json"]);
    expect(planned.code, planned.stderr).toBe(0);
    const placement = planned.doc.placement as JsonObject;
    expect([planned.doc.row, planned.doc.action, placement.node, placement.error]).toEqual([
      "no-instance",
      "place",
      node.nodeId,
      null,
    ]);
    expect(String(placement.explain)).toContain("decision: PLACED on");
    const text = await run(env, ["deploy", fresh, "--dry-run"]);
    expect(text.stdout).toContain(`would place on: ${node.nodeId}`);
    expect(text.stdout).toContain("mesh: row no-instance → place");

    expect(storeImage(home), "no event chained, no decision, placement or record written, no package copied").toEqual(
      before,
    );
    expect(workloadEvents(), "the node chained nothing: nothing was placed, started or unloaded").toBe(nodeEvents);
    expect(node.instancePids()).toEqual(pids);
    expect(
      ((await run(env, ["agents", "--json"])).doc.agents as JsonObject[]).map((a) => a.name),
      "ranger was not deployed",
    ).toEqual(["scout"]);

    // Through a server: the same plan, and not an api.call (a read).
    const { url } = await serve(home);
    const served = withoutLease(storeImage(home));
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
    const remote = await run(client.env, ["deploy", fresh, "--dry-run", "--json"]);
    expect(remote.code, remote.stderr).toBe(0);
    expect([remote.doc.row, remote.doc.action, (remote.doc.placement as JsonObject).node]).toEqual([
      "no-instance",
      "place",
      node.nodeId,
    ]);
    const after = withoutLease(storeImage(home));
    expect(after.chain, "the server chained nothing for the plan").toBe(served.chain);
    expect(after).toEqual(served);
    expect(workloadEvents()).toBe(nodeEvents);

    // And the deploy itself still deploys (and is chained): the plan was a plan.
    const deployed = await run(client.env, ["deploy", fresh, "--json"]);
    expect([deployed.code, deployed.doc.outcome], deployed.stderr).toEqual([0, "started"]);
    expect(storeImage(home).chain).toBeGreaterThan(before.chain);
  });
});
