import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { acceptFacts } from "./facts.js";

const NOW = 1_767_225_600_000;
const NODE = "34750f98bd59fcfc946da45aaabe933b";

function facts(over: JsonObject = {}): JsonObject {
  return {
    version: 1,
    node_id: NODE,
    boot_id: "0".repeat(32),
    seq: 5,
    issued_at_ms: NOW - 1000,
    ttl_s: 300,
    name: "pi-a",
    os: "linux",
    arch: "aarch64",
    board: "pi5",
    cpu: { count: 4, model: "Cortex-A76", load1_milli: 100 },
    memory: { total_bytes: 8 * 2 ** 30, available_bytes: 4 * 2 ** 30 },
    accelerators: [],
    routes: [{ route: "native", arches: ["aarch64"] }],
    interpreters: [],
    labels: {},
    perf: [],
    capabilities: [],
    lease_ms: null,
    instances: 0,
    ...over,
  };
}

describe("accepting a node's facts (spec/mesh.md §6.2)", () => {
  it("accepts fresh facts and computes their expiry from issued_at_ms and ttl_s", () => {
    const v = acceptFacts(facts(), null, NOW);
    expect(v.kind).toBe("accepted");
    expect(v.kind === "accepted" ? [v.seq, v.expireAtMs, v.facts.name] : null).toEqual([
      5,
      NOW - 1000 + 300_000,
      "pi-a",
    ]);
  });

  it.each([
    ["expired facts", facts({ issued_at_ms: NOW - 400_000 }), "facts expired at"],
    ["a ttl below 10 s", facts({ ttl_s: 5 }), "ttl_s"],
    ["a ttl above a day", facts({ ttl_s: 86_401 }), "ttl_s"],
    ["facts issued more than 30 s ahead", facts({ issued_at_ms: NOW + 30_001 }), "ahead"],
    [
      "a self-asserted trust capability",
      facts({ capabilities: [{ id: "trust.pinned", attrs: {}, provenance: "claimed" }] }),
      "trust.pinned",
    ],
    ["a self-asserted tier label", facts({ labels: { "berth.io/tier": "pinned" } }), "berth.io/tier"],
    ["another version", facts({ version: 2 }), "version"],
  ])("rejects %s whole", (_what, raw, reason) => {
    const v = acceptFacts(raw, null, NOW);
    expect(v.kind).toBe("rejected");
    expect(v.kind === "rejected" ? v.reason : "").toContain(reason);
  });

  it("ignores facts older than the cached ones, without rejecting the answer", () => {
    expect(acceptFacts(facts({ seq: 4 }), 5, NOW).kind).toBe("stale");
    expect(acceptFacts(facts({ seq: 5 }), 5, NOW).kind).toBe("accepted");
  });

  it("a trust capability is refused even when it is well formed and everything else is valid", () => {
    const v = acceptFacts(facts({ capabilities: [{ id: "trust", attrs: {}, provenance: "measured" }] }), null, NOW);
    expect(v.kind).toBe("rejected");
  });
});
