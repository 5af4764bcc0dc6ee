import { describe, expect, it } from "vitest";
import { lineDiff, revisionsOf, rollbackTarget } from "./history.js";

const remember = (seq: number, sha: string, extra: Record<string, number> = {}) => ({
  seq,
  payload: {
    agent: "scout",
    spec_sha256: sha,
    intent: `i-${sha}`,
    spec_path: "/s.yaml",
    deployed_ms: seq * 1000,
    ...extra,
  },
});

describe("an agent's spec revisions", () => {
  it("counts a change of spec as a revision and repeated deploys of one spec as one", () => {
    const r = revisionsOf("scout", [
      remember(1, "a"),
      remember(2, "a"),
      remember(3, "b"),
      { seq: 4, payload: { agent: "other", spec_sha256: "z" } },
      remember(5, "a", { rollback_of: 1 }),
    ]);
    expect(r.map((x) => [x.revision, x.spec_sha256, x.seq, x.deploys, x.rollback_of])).toEqual([
      [1, "a", 1, 2, null],
      [2, "b", 3, 1, null],
      [3, "a", 5, 1, 1],
    ]);
  });

  it("rolls back to the previous revision by default, and refuses the current spec or one that is not there", () => {
    const r = revisionsOf("scout", [remember(1, "a"), remember(2, "b")]);
    expect(rollbackTarget(r, undefined)).toMatchObject({ ok: true, value: { revision: 1 } });
    expect(rollbackTarget(r, 2)).toMatchObject({ ok: false });
    expect(rollbackTarget(r, 7)).toMatchObject({ ok: false });
    expect(rollbackTarget(revisionsOf("scout", [remember(1, "a")]), undefined)).toMatchObject({ ok: false });
  });

  it("diffs two spec texts line by line", () => {
    expect(lineDiff("a\nb\nc\n", "a\nx\nc\n")).toEqual(["  a", "- b", "+ x", "  c"]);
  });
});
