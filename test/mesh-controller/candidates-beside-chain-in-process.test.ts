/**
 * Issue 35 (spec/audit-chain.md §12.2, mesh.md §7.7): a placement decision's candidate reports are one canonical
 * document stored beside the chain, in the decision's own transaction, and the decision event carries its hash. At
 * thousands of targets the reports alone pass the chain's 1 MiB payload limit, so before this no placement could be
 * made at all. Real node daemons behind the in-process connector hold the placement; the thousands of other targets
 * are rows of the controller's store that were never described (no key, no facts: each is a rejected candidate, as a
 * node that never answered is), the cheapest way to make a view of that size.
 */
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { readCandidatesOn } from "../../src/chain/summaries.js";
import type { SealedEvent } from "../../src/core/chain/event.js";
import { canonicalJson } from "../../src/core/crypto/canonical.js";
import { nodeIdOf, type PublicKeyHex } from "../../src/core/crypto/ed25519.js";
import { candidatesRefOf } from "../../src/core/placement/candidates-document.js";
import { renderExplain } from "../../src/core/placement/explain.js";
import type { PlaceReport } from "../../src/mesh/controller/index.js";
import type { CallContext, Parsed } from "../../src/server/handler.js";
import { meshHandlers } from "../../src/server/routes/mesh.js";
import { alterStoredSummaries } from "../support/alter-summaries.js";
import { type HostNode, type SeedFixture, seedFixture } from "./support/in-process.js";

/** Enough never-described targets that their reports, inline, would pass 1 MiB (about 250 bytes each). */
const SILENT_TARGETS = 5_000;
const MIB = 1024 * 1024;

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

async function addSilentTargets(f: SeedFixture, count: number): Promise<void> {
  const rows = Array.from({ length: count }, (_, i) => [
    `mem://silent-${i}`,
    nodeIdOf(randomBytes(32).toString("hex") as PublicKeyHex),
    null,
    "paired",
    "api",
    1,
  ]);
  // Rows of 500 per statement: one round trip each on PostgreSQL, not one per target.
  await f.controller.store.engine.transaction(async (tx) => {
    for (let at = 0; at < rows.length; at += 500) {
      const chunk = rows.slice(at, at + 500);
      await tx.run(
        `INSERT INTO mesh_targets (addr, node_id, key, tier, tier_source, learned_ms) VALUES ${chunk.map(() => "(?,?,?,?,?,?)").join(",")}`,
        chunk.flat(),
      );
    }
  });
}

async function decisionEventOf(f: SeedFixture, report: PlaceReport): Promise<SealedEvent> {
  const event = await f.controller.store.decisionEvent(report.decision_id);
  if (!event) throw new Error(`no event for decision ${report.decision_id}`);
  return event;
}

/** `GET /api/v1/placements/:decision_id`, through the route's own handler over the controller's store. */
async function getPlacement(f: SeedFixture, decisionId: string): Promise<Record<string, unknown>> {
  const handler = meshHandlers.getPlacement;
  if (!handler) throw new Error("no getPlacement handler");
  const input: Parsed = { params: { decision_id: decisionId }, query: {}, body: undefined, headers: {} };
  const ctx = { state: { controller: f.controller } } as unknown as CallContext;
  const answer = (await handler(input, ctx)) as { body: Record<string, unknown> };
  return answer.body;
}

describe("a placement decision over thousands of targets", () => {
  it("commits and dispatches with its candidate reports beside the chain, and reads back as the engine made it", async () => {
    fx = await seedFixture();
    const f = fx;
    const [first, second] = f.nodes as [HostNode, HostNode];
    expect((await f.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    expect((await f.controller.addTarget(second.addr, "paired")).ok).toBe(true);
    await addSilentTargets(f, SILENT_TARGETS);

    const report = await f.controller.place({ package: f.pkgDir, name: "wide", config: { mode: "service" } });
    expect(report.placed?.node_id).toBeDefined();
    expect(report.decision.candidates).toHaveLength(SILENT_TARGETS + 2);
    // Inline, the reports alone would not fit in one event: the size that made every placement fail.
    expect(canonicalJson(report.decision.candidates).length).toBeGreaterThan(MIB);

    const event = await decisionEventOf(f, report);
    expect(canonicalJson(event.payload).length).toBeLessThan(64 * 1024);
    expect(event.payload.decision).not.toHaveProperty("candidates");
    const ref = candidatesRefOf(event.payload);
    expect(ref).toMatchObject({ count: SILENT_TARGETS + 2, eligible: 2 });
    const { candidates: _beside, ...rest } = report.decision;
    expect(event.payload.decision).toEqual(JSON.parse(JSON.stringify(rest)));

    const stored = await f.controller.store.engine.read((q) =>
      readCandidatesOn(q, f.controller.store.chain.chainId, ref?.summary ?? ""),
    );
    expect(stored.kind).toBe("found");

    const answer = await getPlacement(f, report.decision_id);
    expect(answer.decision).toEqual(JSON.parse(JSON.stringify(report.decision)));
    // The route's explain is the decision's (without the dispatch lines of the PlaceReport), as before.
    expect(answer.explain).toBe(renderExplain(report.decision, { decision_id: report.decision_id }));
    expect(answer.state).toBe("placed");
    expect((await f.controller.store.chain.verifyStored()).ok).toBe(true);
  });

  it("fails verification with `summary` at the decision, and the API refuses to explain from it, when its stored candidates document is altered", async () => {
    fx = await seedFixture();
    const f = fx;
    const [first] = f.nodes as [HostNode];
    expect((await f.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    await addSilentTargets(f, 3);
    const report = await f.controller.place({ package: f.pkgDir, name: "tampered", config: { mode: "service" } });
    const event = await decisionEventOf(f, report);
    const ref = candidatesRefOf(event.payload);
    expect(ref).not.toBeNull();
    expect((await f.controller.store.chain.verifyStored()).ok).toBe(true);

    // Someone with write access to the database marks a rejected node eligible (the append-only trigger is defence in
    // depth only, spec §7: an attacker drops it first).
    await alterStoredSummaries(f.controller.store.engine, '"eligible":false', '"eligible":true', ref?.summary ?? "");
    const result = await f.controller.store.chain.verifyStored();
    expect(result.ok).toBe(false);
    expect(result.failure).toMatchObject({ seq: event.seq, code: "summary" });
    expect(result.failure?.detail).toContain("candidates document");
    // And no explain is built from it: the API answers the failure instead of the altered reports.
    await expect(getPlacement(f, report.decision_id)).rejects.toThrow("does not hash to its name");
  });
});
