/**
 * The benchmark cluster of the placement engine (issue 6), shared by bench/placement/engine.ts and the controller
 * benchmarks that need realistic decisions: a deterministic mix of mostly eligible Pi and x86 boards, some suspect,
 * discovered, denied or short of memory; a workload with two variants, a common requirement, a preference, a perf
 * metric, co-residency exclusions and a preferred node; one instance per two nodes.
 */
import { createHash } from "node:crypto";
import type { NodeId } from "../../../src/core/crypto/ed25519.js";
import { NOW, PACKAGE_ID } from "../../../test/support/placement/fixtures.js";

/** A small deterministic generator, so every run measures the same cluster. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Node ids as they really are: 32 hex of a SHA-256 (§3.1), not the zero-padded ids of the unit tests. */
export function benchId(i: number): NodeId {
  return createHash("sha256").update(`bench-node-${i}`).digest("hex").slice(0, 32) as NodeId;
}

/** The engine input for `n` nodes, before validation (what the controller hands `parsePlacementInput`). */
export function rawInput(n: number): unknown {
  const rnd = lcg(n);
  const nid = benchId;
  const nodes = [];
  const gate: Record<string, { verdict: string; reason: string }> = {};
  const instances = [];
  for (let i = 0; i < n; i++) {
    const id = nid(i + 1);
    const x86 = rnd() < 0.3;
    const roll = rnd();
    nodes.push({
      node_id: id,
      tier: roll < 0.05 ? "discovered" : "paired",
      liveness: roll > 0.95 ? "suspect" : "alive",
      facts_expire_at_ms: NOW + 300_000,
      facts: {
        node_id: id,
        issued_at_ms: NOW - 5_000,
        name: `node-${i}`,
        os: "linux",
        arch: x86 ? "x86_64" : "aarch64",
        board: x86 ? "generic" : rnd() < 0.5 ? "pi5" : "pi4",
        cpu: { count: 4, model: "bench", load1_milli: Math.floor(rnd() * 4_000) },
        memory: { total_bytes: 8 * 2 ** 30, available_bytes: Math.floor(rnd() * 4 * 2 ** 30) },
        routes: [
          { route: "native", arches: [x86 ? "x86_64" : "aarch64"] },
          ...(x86 ? [{ route: "emulated", via: "qemu-user", arches: ["aarch64"] }] : []),
        ],
        interpreters: [{ name: "python3", version: "3.11" }],
        labels: { zone: rnd() < 0.5 ? "attic" : "hall" },
        perf: [
          {
            metric: "tokens_per_s",
            subject: "llama",
            value_milli: Math.floor(rnd() * 50_000),
            direction: "higher",
            measured_at_ms: NOW - 60_000,
          },
        ],
        accelerators: rnd() < 0.1 ? [{ id: "accel.npu.hailo8", mem_bytes: 0, count: 1 }] : [],
      },
    });
    gate[id] =
      rnd() < 0.03 ? { verdict: "deny", reason: "default deny" } : { verdict: "permit", reason: "bench-agent" };
    if (i % 2 === 0) {
      instances.push({
        node_id: id,
        name: `svc-${i}`,
        labels: rnd() < 0.1 ? ["gpu-heavy"] : [],
        memory_bytes: 2 ** 28,
        placed_at_ms: NOW - 1_000,
      });
    }
  }
  return {
    request: {
      spec: {
        name: "triage",
        kind: "agent",
        package_id: PACKAGE_ID,
        variants: [
          { id: "aarch64-linux", arch: "aarch64", os: "linux", entry: { program: "bin/agent-aarch64" } },
          { id: "x86_64-linux", arch: "x86_64", os: "linux", entry: { program: "bin/agent-x86_64" } },
        ],
        requirements: [{ id: "mem.system", where: [{ attr: "total_bytes", op: "gte", value: 2 ** 30 }] }],
        preferences: [
          { requirement: { id: "label.zone", where: [{ attr: "value", op: "eq", value: "attic" }] }, weight: 5 },
        ],
        memory_bytes: 512 * 2 ** 20,
        policy: { excludes: ["gpu-heavy"] },
        perf: { metric: "tokens_per_s", direction: "higher" },
        refs: [PACKAGE_ID],
      },
      prefer: [nid(3)],
      avoid: [nid(1)],
      gate,
    },
    nodes,
    cluster: { now_ms: NOW, revoked_nodes: [nid(5)], revoked_refs: [], instances },
  };
}
