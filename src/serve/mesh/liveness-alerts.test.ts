import { describe, expect, it } from "vitest";
import type { Liveness } from "../../core/placement/inputs.js";
import { livenessChanges, livenessMessage } from "./liveness-alerts.js";

const target = (node: string, liveness: Liveness, error: string | null = null) => ({
  addr: `${node}:1`,
  node_id: node,
  name: null,
  liveness,
  unreachable_since_ms: error === null ? null : 1_000,
  error,
});

describe("a node's liveness changes, as berth serve says them (issue 37, F5)", () => {
  it("says nothing of a node the first time it is seen, whatever its liveness", () => {
    const r = livenessChanges(new Map(), [target("a", "dead", "no answer"), target("b", "alive")]);
    expect(r.changes).toEqual([]);
    expect([...r.seen]).toEqual([
      ["a", "dead"],
      ["b", "alive"],
    ]);
  });

  it("says each change once: alive to suspect, suspect to dead, dead to alive; a first answer (unknown to alive) is no news", () => {
    let seen = livenessChanges(new Map(), [target("a", "alive"), target("b", "unknown")]).seen;
    const steps: Array<[Liveness, Liveness]> = [];
    for (const [a, b] of [
      ["suspect", "alive"],
      ["suspect", "alive"],
      ["dead", "alive"],
      ["alive", "alive"],
    ] as Array<[Liveness, Liveness]>) {
      const r = livenessChanges(seen, [
        target("a", a, a === "alive" ? null : "no frame within 5000 ms"),
        target("b", b),
      ]);
      seen = r.seen;
      for (const c of r.changes) steps.push([c.from, c.to]);
    }
    expect(steps).toEqual([
      ["alive", "suspect"],
      ["suspect", "dead"],
      ["dead", "alive"],
    ]);
  });

  it("warns when a node stopped answering, naming why and what happens to its agents; informs when it answers again", () => {
    const [down] = livenessChanges(new Map([["a", "alive"]]), [
      target("a", "suspect", "no frame within 5000 ms"),
    ]).changes;
    expect(livenessMessage(down!)).toEqual({
      level: "warn",
      message: expect.stringMatching(
        /^node a is suspect: its last contact was not answered \(no frame within 5000 ms\); its agents are held/,
      ),
    });
    const [up] = livenessChanges(new Map([["a", "dead"]]), [target("a", "alive")]).changes;
    expect(livenessMessage(up!)).toEqual({ level: "info", message: "node a is alive again" });
  });
});
