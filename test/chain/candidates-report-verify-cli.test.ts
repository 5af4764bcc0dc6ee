/**
 * Issue 35, judged the way an auditor does: a controller store holding a decision over 3,500 nodes (its candidate
 * report stored beside the chain, spec/audit-chain.md §7.1) is closed, and `berth audit verify --db` runs on the file as
 * a separate process. It passes; then someone with the file edits the stored report (dropping the append-only
 * trigger first) and the same command fails, naming the candidates document and the `summary` check.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { EngineChain } from "../../src/chain/engine-chain.js";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { signingKeyFromSeed } from "../../src/core/crypto/ed25519.js";
import { candidatesDocumentOf, decisionWithoutCandidates } from "../../src/core/placement/candidates-document.js";
import { decide } from "../../src/core/placement/decide.js";
import { ControllerStore } from "../../src/mesh/controller/store.js";
import { SqliteEngine } from "../../src/store/sqlite-engine.js";
import { berthBin } from "../support/built.js";
import { inputOf, nid, nodeDraft } from "../support/placement/fixtures.js";
import { runNode } from "../support/process.js";
import { PLAIN_WORKLOAD } from "../support/workload.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("berth audit verify on a store holding a decision's candidate report", () => {
  it("passes as written, and fails with summary naming the candidates document once the report is edited", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-candidates-verify-"));
    dirs.push(dir);
    const db = join(dir, "controller.db");
    const key = signingKeyFromSeed(new Uint8Array(32).fill(7));
    const engine = SqliteEngine.open(db);
    const clock = () => 1_767_225_600_000;
    const chain = await EngineChain.open(engine, key, "controller", clock);
    const store = await ControllerStore.open(engine, chain, clock);
    const nodes = Array.from({ length: 3_500 }, (_, i) => nodeDraft(nid(i + 1)));
    const decided = decide(inputOf({ nodes }));
    if (!decided.ok) throw new Error(decided.error.message);
    const document = candidatesDocumentOf(decided.value.candidates);
    await store.commitDecision({
      name: "wide",
      packageId: PLAIN_WORKLOAD.package_id,
      workload: PLAIN_WORKLOAD,
      dispatch: false,
      candidates: document,
      event: {
        source: "placement",
        kind: "workload.place",
        payload: {
          phase: "decision",
          name: "wide",
          decision: decisionWithoutCandidates(decided.value),
          candidates: document.ref as unknown as JsonObject,
        },
      },
      refusal: (error) => ({ source: "placement", kind: "workload.refuse", payload: { phase: "decision", error } }),
    });
    await engine.close();
    const verify = () => runNode([berthBin(), "audit", "verify", "--db", db, "--key", key.publicKey, "--json"]);

    const before = await verify();
    expect(before.code, before.stdout + before.stderr).toBe(0);

    const file = new Database(db);
    file.exec("DROP TRIGGER audit_summary_no_update");
    const changed = file
      .prepare(
        "UPDATE audit_summary SET body = replace(body, '\"eligible\":true', '\"eligible\":false') WHERE hash = ?",
      )
      .run(document.ref.summary).changes;
    file.close();
    expect(changed).toBe(1);

    const after = await verify();
    expect(after.code).not.toBe(0);
    expect(after.stdout + after.stderr).toContain("summary");
    expect(after.stdout + after.stderr).toContain(`candidates document ${document.ref.summary}`);
  });
});
