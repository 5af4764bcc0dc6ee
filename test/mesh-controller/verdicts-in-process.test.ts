/**
 * Issue 35 (spec/mesh.md §7.7, audit-chain.md §8 check 10): the gate's verdicts over a placement's view are one
 * canonical summary stored beside the chain, whose hash the decision event carries, so a placement adds the same
 * number of chain events whatever the number of targets. Real node daemons behind the in-process connector; the
 * chain and the summaries are read back from the store, and the verifier is the one `berth audit verify` runs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { readSummaryOn } from "../../src/chain/summaries.js";
import type { SealedEvent } from "../../src/core/chain/event.js";
import { gateSummaryRefOf, verdictOfNode } from "../../src/core/governance/summary.js";
import { alterStoredSummaries } from "../support/alter-summaries.js";
import { type HostNode, type SeedFixture, seedFixture, startNode } from "./support/in-process.js";
import { TEST_PERMIT } from "./support/package.js";

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

/** The events a call appended to the controller's chain. */
async function appendedBy(f: SeedFixture, call: () => Promise<unknown>): Promise<SealedEvent[]> {
  const from = (await f.controller.store.chain.tip()).seq + 1;
  await call();
  return f.controller.store.chain.find({ fromSeq: from });
}

const decisionOf = (events: readonly SealedEvent[]) => {
  const decision = events.find(
    (e) => e.source === "placement" && e.kind === "workload.place" && e.payload.phase === "decision",
  );
  if (!decision) throw new Error(`no decision among ${events.map((e) => `${e.source}/${e.kind}`).join(", ")}`);
  return decision;
};

async function summaryOf(f: SeedFixture, event: SealedEvent) {
  const ref = gateSummaryRefOf(event.payload);
  if (!ref) throw new Error("the event names no gate summary");
  const read = await f.controller.store.engine.read((q) =>
    readSummaryOn(q, f.controller.store.chain.chainId, ref.summary),
  );
  if (read.kind !== "found") throw new Error(`summary ${ref.summary}: ${read.kind}`);
  return { ref, summary: read.summary };
}

describe("a placement's gate verdicts over the view", () => {
  it("add the same number of chain events over two targets as over five, one summary naming every target's verdict", async () => {
    fx = await seedFixture();
    const f = fx;
    const [first, second] = f.nodes as [HostNode, HostNode];
    expect((await f.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    expect((await f.controller.addTarget(second.addr, "discovered")).ok).toBe(true);
    const place = (name: string) => () => f.controller.place({ package: f.pkgDir, name, config: { mode: "service" } });

    const overTwo = await appendedBy(f, place("over-two"));
    for (const name of ["third", "fourth", "fifth"]) {
      const node = await startNode(f.root, name, f.key.publicKey, f.signer.publicKey, [TEST_PERMIT], f.memory);
      f.nodes.push(node);
      // A third tier: before issue 35 that was a third verdict event, so the count grew with the view.
      expect((await f.controller.addTarget(node.addr, name === "third" ? "pinned" : "paired")).ok).toBe(true);
    }
    const overFive = await appendedBy(f, place("over-five"));

    const shape = (events: readonly SealedEvent[]) =>
      events.map((e) => `${e.source}/${e.kind}:${String(e.payload.phase)}`);
    expect(shape(overFive)).toEqual(shape(overTwo));
    expect(overFive.filter((e) => e.source === "gate")).toEqual([]);

    // The summary the decision names holds each target's own verdict: `discovered` is below the permit's tier.
    const { ref, summary } = await summaryOf(f, decisionOf(overFive));
    expect(ref).toMatchObject({ action: "workload.place", nodes: 5, permitted: 4 });
    expect(Object.keys(summary.nodes)).toEqual(f.nodes.map((n) => n.id).sort());
    for (const n of f.nodes) {
      const verdict = verdictOfNode(summary, n.id);
      expect(verdict).toMatchObject({
        action: "workload.place",
        node: n.id,
        decision: n === second ? "deny" : "permit",
      });
    }
    expect(String(verdictOfNode(summary, second.id)?.reason)).toContain("min_node_tier");
    expect((await f.controller.store.chain.verifyStored()).ok).toBe(true);
  });

  it("are stored in the transaction of what they led to: the decision, or the refusal of a taken name", async () => {
    fx = await seedFixture();
    const f = fx;
    const [first] = f.nodes as [HostNode];
    expect((await f.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    const { store } = f.controller;
    const summaries = async () =>
      Number((await store.engine.read((q) => q.get<{ n: number }>("SELECT COUNT(*) AS n FROM audit_summary")))?.n);
    // Each transaction's appends, read back after it commits (one writer at a time: the tip moves only by its own).
    const commits: string[][] = [];
    const engine = store.engine as { transaction: typeof store.engine.transaction };
    const transaction = engine.transaction.bind(store.engine);
    engine.transaction = async (fn, options) => {
      const from = (await store.chain.tip()).seq + 1;
      const before = await summaries();
      const value = await transaction(fn, options);
      const appended = (await store.chain.find({ fromSeq: from })).map(
        (e) => `${e.source}/${e.kind}${typeof e.payload.phase === "string" ? `:${e.payload.phase}` : ""}`,
      );
      if ((await summaries()) > before) appended.push("gate summary");
      if (appended.length > 0) commits.push(appended);
      return value;
    };
    const placed = await f.controller.place({ package: f.pkgDir, name: "rides", config: { mode: "service" } });
    expect(placed.placed).not.toBeNull();
    await expect(
      f.controller.place({ package: f.pkgDir, name: "rides", config: { mode: "service" } }),
    ).rejects.toMatchObject({ code: "name_taken" });
    expect(
      commits.filter((c) => c.some((k) => k.endsWith(":decision"))),
      JSON.stringify(commits),
    ).toEqual([
      ["placement/workload.place:decision", "gate summary"],
      // The same view and workload: the refusal names the summary already stored (one row, by its hash).
      ["placement/workload.refuse:decision"],
    ]);
    const refusal = (await store.chain.find({ source: "placement", kind: "workload.refuse", phase: "decision" })).at(
      -1,
    );
    expect(refusal && gateSummaryRefOf(refusal.payload)?.summary).toBe(
      gateSummaryRefOf(decisionOf(await store.chain.find({ phase: "decision" })).payload)?.summary,
    );
  });

  it("fail verification when the stored summary is altered, naming the decision event that signed its hash", async () => {
    fx = await seedFixture();
    const f = fx;
    const [first] = f.nodes as [HostNode];
    expect((await f.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    const events = await appendedBy(f, () =>
      f.controller.place({ package: f.pkgDir, name: "tampered", config: { mode: "service" } }),
    );
    const decision = decisionOf(events);
    expect((await f.controller.store.chain.verifyStored()).ok).toBe(true);

    // Someone with write access to the database turns the refusal into a permit (the append-only trigger is
    // defence in depth only, spec §7: an attacker drops it first).
    await alterStoredSummaries(f.controller.store.engine, "permitted by rule", "allowed by rule");
    const result = await f.controller.store.chain.verifyStored();
    expect(result.ok).toBe(false);
    expect(result.failure).toMatchObject({ seq: decision.seq, code: "summary" });
    expect(result.failure?.detail).toContain(`seq ${decision.seq}`);
  });
});
