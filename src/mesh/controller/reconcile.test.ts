import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { rowsForDecision } from "./reconcile.js";
import { heldStatusRow } from "../../../test/support/status-row.js";

const D = "a".repeat(64);
const OTHER = "b".repeat(64);

function held(instance_id: string, decision_id: string): JsonObject {
  return heldStatusRow({ instance_id, decision_id });
}

describe("reading a status answer for one decision (spec/mesh.md §10.1, §11.2)", () => {
  it("finds the in-flight mark and the instances that carry the decision, ignoring departed rows and other decisions", () => {
    const rows: JsonObject[] = [
      { decision_id: D, in_flight: true, method: "place", since_ms: 1 },
      held("probe-000000000001", D),
      held("probe-000000000002", OTHER),
      { instance_id: "probe-000000000003", decision_id: D, departed: "unloaded", at_ms: 2 },
    ];
    expect(rowsForDecision({ rows }, D)).toEqual({ inFlight: true, instances: ["probe-000000000001"] });
    expect(rowsForDecision({ rows }, OTHER)).toEqual({ inFlight: false, instances: ["probe-000000000002"] });
  });

  it("an empty table proves the decision holds nothing", () => {
    expect(rowsForDecision({ rows: [] }, D)).toEqual({ inFlight: false, instances: [] });
  });

  it("an answer that is not an array of rows is unexpected, never read as empty", () => {
    expect(rowsForDecision({}, D)).toBeNull();
    expect(rowsForDecision({ rows: "none" }, D)).toBeNull();
    expect(rowsForDecision({ rows: [1] }, D)).toBeNull();
    // A row missing a member the schema requires is not guessed at either.
    expect(
      rowsForDecision({ rows: [{ instance_id: "probe-000000000001", decision_id: D, state: "running" }] }, D),
    ).toBeNull();
  });
});
