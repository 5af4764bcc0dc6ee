import { describe, expect, it } from "vitest";
import { ALIVE_WINDOW_MS, judgeNodeLiveness } from "./node-liveness.js";

describe("judging a node's liveness from its recorded contacts", () => {
  it("a node that never answered is unknown", () => {
    expect(judgeNodeLiveness({ last_ok_ms: null, unreachable_since_ms: null }, 1_000)).toBe("unknown");
  });

  it("a node that answered within the alive window is alive, and suspect once nobody has heard from it for longer", () => {
    expect(judgeNodeLiveness({ last_ok_ms: 1_000, unreachable_since_ms: null }, 1_000 + ALIVE_WINDOW_MS - 1)).toBe(
      "alive",
    );
    expect(judgeNodeLiveness({ last_ok_ms: 1_000, unreachable_since_ms: null }, 1_000 + ALIVE_WINDOW_MS)).toBe(
      "suspect",
    );
  });

  it("an unreachable node is suspect until dead_after has passed since it became unreachable, then dead", () => {
    const c = { last_ok_ms: 500, unreachable_since_ms: 1_000 };
    expect(judgeNodeLiveness(c, 1_000 + 4_999, 5_000)).toBe("suspect");
    expect(judgeNodeLiveness(c, 1_000 + 5_000, 5_000)).toBe("dead");
  });

  it("a node never reached whose first contact failed is unreachable too, and dies the same way", () => {
    expect(judgeNodeLiveness({ last_ok_ms: null, unreachable_since_ms: 0 }, 10, 5_000)).toBe("suspect");
    expect(judgeNodeLiveness({ last_ok_ms: null, unreachable_since_ms: 0 }, 5_000, 5_000)).toBe("dead");
  });
});
