/**
 * Issue 35 (spec/mesh.md §9.2 step 3): placements made at the same time refresh the targets whose facts they cannot
 * reuse once between them, not once each: a placement that finds a describe of a target already out waits for its
 * answer. Judged by the connections the nodes were asked for (the in-process connector every call goes through).
 */
import { afterEach, describe, expect, it } from "vitest";
import { type SeedFixture, seedFixture } from "./support/in-process.js";

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

describe("concurrent placements and the refresh before them", () => {
  it("eight dry runs started together right after the controller opens describe each target once between them", async () => {
    fx = await seedFixture();
    const f = fx;
    for (const n of f.nodes) expect((await f.controller.addTarget(n.addr, "paired")).ok).toBe(true);
    // A controller just opened has described nothing itself: every target's facts must be refreshed before a decision.
    const controller = await f.reopen();
    const connects = new Map<string, number>();
    const connect = f.memory.connect.bind(f.memory);
    f.memory.connect = (addr: string) => {
      connects.set(addr, (connects.get(addr) ?? 0) + 1);
      return connect(addr);
    };
    const reports = await Promise.all(
      Array.from({ length: 8 }, (_, i) => controller.place({ package: f.pkgDir, name: `dry-${i}`, dry_run: true })),
    );
    for (const r of reports) expect(r.decision.placement, r.explain).not.toBeNull();
    // One describe per target (before issue 35: one per target per placement, 8 each).
    expect(Object.fromEntries(connects)).toEqual(Object.fromEntries(f.nodes.map((n) => [n.addr, 1])));
  });
});
