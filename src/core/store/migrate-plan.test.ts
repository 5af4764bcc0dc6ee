import { describe, expect, it } from "vitest";
import type { OwnerLease } from "../mesh/owner-liveness.js";
import { judgeCopied, judgeSource, judgeTarget, planCopy, type TableShape } from "./migrate-plan.js";

const here = { host: "ctl-a", boot_id: "boot-1", now_ms: 100_000 };
const lease = (over: Partial<OwnerLease> = {}): OwnerLease => ({
  owner_id: "o-1",
  epoch: 4,
  pid: 4121,
  start_time: "777",
  boot_id: "boot-1",
  host: "ctl-a",
  renewed_ms: 90_000,
  ttl_ms: 15_000,
  released_ms: null,
  ...over,
});

const table = (name: string, rows: number, columns: string[] = ["id", "v"], generated: string[] = []): TableShape => ({
  name,
  rows,
  primaryKey: ["id"],
  columns: [
    ...columns.map((c) => ({ name: c, generated: false })),
    ...generated.map((c) => ({ name: c, generated: true })),
  ],
});
const versions = (s: Record<string, number>, t: Record<string, number> = s) => ({
  source: new Map(Object.entries(s)),
  target: new Map(Object.entries(t)),
});

describe("may the source store move now (berth migrate, issue 20)", () => {
  it.each([
    ["a store nobody holds moves", [], true],
    [
      "a store whose owners all released their leases moves",
      [{ lease: lease({ released_ms: 95_000 }), pidStartTime: null }],
      true,
    ],
    ["a store whose owner died on this machine moves (pid gone)", [{ lease: lease(), pidStartTime: null }], true],
    ["a store whose owner's pid was reused moves", [{ lease: lease(), pidStartTime: "999" }], true],
    ["a store with a live owner on this machine is refused", [{ lease: lease(), pidStartTime: "777" }], false],
    [
      "a store with an owner on another host renewed within its TTL is refused",
      [{ lease: lease({ host: "ctl-b", boot_id: "x" }), pidStartTime: null }],
      false,
    ],
    [
      "a store with an owner on another host silent past its TTL moves",
      [{ lease: lease({ host: "ctl-b", boot_id: "x", renewed_ms: 80_000 }), pidStartTime: null }],
      true,
    ],
  ] as const)("%s", (_name, owners, ok) => {
    expect(judgeSource(owners, null, here).ok).toBe(ok);
  });

  it("the refusal names the holder, and says it leads when it holds the leader row", () => {
    const v = judgeSource(
      [{ lease: lease(), pidStartTime: "777" }],
      { owner_id: "o-1", epoch: 9, pid: 4121, host: "ctl-a", released_ms: null },
      here,
    );
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.error).toContain("the leader (epoch 9), pid 4121 on ctl-a, owner o-1");
    expect(v.error).toMatch(/stop every berth serve/);
  });
});

describe("is the target empty", () => {
  it("a database without tables is empty", () => {
    expect(judgeTarget({ tables: [], leaseEpoch: null, storeId: null }).ok).toBe(true);
  });

  it("a database with berth's tables and only their seeds is empty (the counter at 0, the schema versions)", () => {
    const tables = [
      { name: "berth_schema", rows: 4 },
      { name: "berth_lease_epoch", rows: 1 },
      { name: "audit_event", rows: 0 },
    ];
    expect(judgeTarget({ tables, leaseEpoch: 0, storeId: null }).ok).toBe(true);
  });

  it("a database that holds a store is refused naming what it holds and its store id", () => {
    const v = judgeTarget({
      tables: [
        { name: "berth_store", rows: 1 },
        { name: "audit_event", rows: 12 },
        { name: "berth_lease_epoch", rows: 1 },
      ],
      leaseEpoch: 3,
      storeId: "ab".repeat(16),
    });
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.error).toContain("berth_store (1 row), audit_event (12 rows), berth_lease_epoch (1 row)");
    expect(v.error).toContain(`controller store ${"ab".repeat(16)}`);
    expect(v.error).toContain("nothing was written");
  });

  it("a database with an unrelated table holding rows is refused too (it is someone's database)", () => {
    expect(judgeTarget({ tables: [{ name: "invoices", rows: 2 }], leaseEpoch: null, storeId: null }).ok).toBe(false);
  });
});

describe("which rows go where", () => {
  it("every table is copied column for column, in name order, in primary-key order; generated columns are left to the engine", () => {
    const src = [
      table("mesh_targets", 2),
      table("audit_event", 5, ["chain_id", "seq", "payload"], ["phase"]),
      table("berth_schema", 4),
    ];
    const dst = [
      table("audit_event", 0, ["chain_id", "seq", "payload"], ["phase"]),
      table("mesh_targets", 0),
      table("berth_schema", 4),
    ];
    const plan = planCopy(src, dst, versions({ audit: 1 }));
    expect(plan.ok).toBe(true);
    if (!plan.ok) return;
    expect(plan.value.copies.map((c) => [c.table, c.columns, c.rows])).toEqual([
      ["audit_event", ["chain_id", "seq", "payload"], 5],
      ["mesh_targets", ["id", "v"], 2],
    ]);
    expect(plan.value.copies.every((c) => c.orderBy.join() === "id")).toBe(true);
  });

  it("the store id and the epoch counter replace what the new store's schema creation seeded", () => {
    const plan = planCopy(
      [table("berth_store", 1), table("berth_lease_epoch", 1)],
      [table("berth_store", 1), table("berth_lease_epoch", 1)],
      versions({}),
    );
    expect(plan.ok && plan.value.copies.map((c) => [c.table, c.replaceSeed])).toEqual([
      ["berth_lease_epoch", true],
      ["berth_store", true],
    ]);
  });

  it("a table of the source with rows the new store does not have refuses the whole copy; an empty one is noted", () => {
    const refused = planCopy([table("mesh_watch_nodes", 3)], [], versions({}));
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error).toContain("mesh_watch_nodes (3 rows) has no place");
    const noted = planCopy([table("mesh_watch_nodes", 0)], [], versions({}));
    expect(noted.ok && noted.value.notes).toEqual([
      "mesh_watch_nodes: empty in the source and not part of the new store; not copied",
    ]);
  });

  it("a source column with no column to go to refuses the copy (nothing is dropped)", () => {
    const plan = planCopy([table("mesh_targets", 1, ["id", "v", "extra"])], [table("mesh_targets", 0)], versions({}));
    expect(plan.ok).toBe(false);
    if (!plan.ok) expect(plan.error).toContain("mesh_targets.extra");
  });

  it("a table the schema creation filled that is not a known seed refuses the copy", () => {
    const plan = planCopy([table("audit_chain", 1)], [table("audit_chain", 1)], versions({}));
    expect(plan.ok).toBe(false);
  });

  it.each([
    [
      "older in the source: upgrade it first",
      { mesh_controller: 3 },
      { mesh_controller: 4 },
      /version 3, the new store's 4: run any berth verb/,
    ],
    [
      "newer in the source: use the berth that wrote it",
      { mesh_controller: 5 },
      { mesh_controller: 4 },
      /newer than this berth writes/,
    ],
    ["unknown to the new store", { other: 1 }, {}, /does not make/],
  ])("schema versions that differ refuse the copy (%s)", (_name, s, t, why) => {
    const plan = planCopy([], [], versions(s, t));
    expect(plan.ok).toBe(false);
    if (!plan.ok) expect(plan.error).toMatch(why);
  });
});

describe("the copy is checked before it commits", () => {
  const m = (entries: Array<[string, number, string]>) =>
    new Map(entries.map(([t, rows, digest]) => [t, { rows, digest }]));
  it.each([
    ["the same rows pass", m([["a", 2, "x"]]), true],
    ["a missing row fails", m([["a", 1, "x"]]), false],
    ["a changed row fails", m([["a", 2, "y"]]), false],
    ["a missing table fails", m([]), false],
  ])("%s", (_name, found, ok) => {
    expect(judgeCopied(m([["a", 2, "x"]]), found).ok).toBe(ok);
  });
});
