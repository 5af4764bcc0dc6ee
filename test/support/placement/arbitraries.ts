/**
 * fast-check generators of valid placement inputs (random facts and requests, spec/mesh.md §18.4), for the property
 * tests. Values come from small vocabularies so that collisions (same arch, same label, a pin that names a real
 * node) are frequent enough to exercise every branch. Test-only.
 */
import fc from "fast-check";
import type { z } from "zod";
import type { NodeId } from "../../../src/core/crypto/ed25519.js";
import { NOW, nid, PACKAGE_ID } from "./fixtures.js";
import { type PlacementInput, placementInputSchema } from "../../../src/core/placement/inputs.js";

type Draft = z.input<typeof placementInputSchema>;

const ARCH = ["aarch64", "armv7", "x86_64"] as const;
const VARIANT_ARCH = [...ARCH, "any"] as const;
const BOARDS = ["pi5", "pi4", "dev", "generic"] as const;
const LABELS = ["gpu-heavy", "noisy", "quiet"] as const;
const CAPS = ["accel.gpu.nvidia", "accel.npu.hailo8", "camera.csi", "label.zone", "os.linux", "runtime.interp.python3"];
const SIGNER = "ab".repeat(32);

/** The usual value 4 times in 5, so most inputs have eligible nodes, and something else otherwise. */
function often<T>(usual: T, other: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof(
    { arbitrary: fc.constant(null).map(() => structuredClone(usual)), weight: 4 },
    { arbitrary: other, weight: 1 },
  );
}

const weight = fc.integer({ min: 0, max: 200_000 }).map((c) => c / 100);

const requirement = fc
  .record({
    id: fc.constantFrom(...CAPS),
    prefix: fc.boolean(),
    where: fc.boolean(),
    count: fc.integer({ min: 1, max: 3 }),
    min_provenance: fc.constantFrom("claimed" as const, "probed" as const, "measured" as const),
  })
  .map(({ id, prefix, where, count, min_provenance }) => ({
    ...(prefix ? { id_prefix: id.split(".").slice(0, 2).join(".") } : { id }),
    where: where ? [{ attr: "mem_bytes", op: "gte" as const, value: 2 ** 31 }] : [],
    count,
    min_provenance,
  }));

const facts = (id: NodeId) =>
  fc
    .record({
      node_id: fc.constant(id),
      issued_at_ms: fc.integer({ min: NOW - 100_000, max: NOW }),
      name: fc.constantFrom("pi-a", "pi-b", "laptop", ""),
      os: often("linux" as const, fc.constant("darwin" as const)),
      arch: often("aarch64" as const, fc.constantFrom(...ARCH)),
      board: fc.constantFrom(...BOARDS),
      cpu: fc.record({
        count: fc.integer({ min: 0, max: 16 }),
        load1_milli: fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: null }),
      }),
      memory: fc.record({ total_bytes: fc.constant(2 ** 34), available_bytes: fc.integer({ min: 0, max: 2 ** 33 }) }),
      accelerators: fc.uniqueArray(
        fc.record({
          id: fc.constantFrom("accel.gpu.nvidia", "accel.gpu.amd", "accel.npu.hailo8"),
          mem_bytes: fc.integer({ min: 0, max: 2 ** 35 }),
          count: fc.integer({ min: 0, max: 4 }),
        }),
        { maxLength: 3, selector: (a) => a.id },
      ),
      routes: fc
        .tuple(often(true, fc.constant(false)), fc.subarray([...ARCH]))
        .map(([native, emulated]) => [
          ...(native ? [{ route: "native" as const, arches: ["aarch64" as const] }] : []),
          ...(emulated.length > 0 ? [{ route: "emulated" as const, via: "qemu-user", arches: emulated }] : []),
        ]),
      interpreters: fc.subarray([
        { name: "python3", version: "3.11" },
        { name: "node", version: "20.19" },
      ]),
      labels: fc.option(fc.constant({ zone: "attic" }), { nil: undefined }),
      perf: fc.array(
        fc.record({
          metric: fc.constantFrom("tps", "latency"),
          value_milli: fc.integer({ min: 0, max: 100_000 }),
          direction: fc.constantFrom("lower" as const, "higher" as const),
          measured_at_ms: fc.constant(NOW - 10),
          provenance: fc.constantFrom("claimed" as const, "measured" as const),
        }),
        { maxLength: 3 },
      ),
      capabilities: fc.oneof(
        { arbitrary: fc.subarray([{ id: "camera.csi" }, { id: "accel.tpu.coral" }]), weight: 10 },
        // Self-asserted trust is rare on purpose: it makes the facts refused whole.
        { arbitrary: fc.constant(null).map(() => [{ id: "trust.tier" }]), weight: 1 },
      ),
    })
    .map((f) => ({
      ...f,
      // A native route always lists the node's own arch (§6.1).
      routes: f.routes.map((r) => (r.route === "native" ? { ...r, arches: [f.arch] } : r)),
    }));

export const nodeIds = fc.uniqueArray(fc.integer({ min: 1, max: 64 }), { maxLength: 8 }).map((ns) => ns.map(nid));

/** A random valid input draft; `placementInputSchema` accepts every one of them. */
export const inputDraft: fc.Arbitrary<Draft> = nodeIds
  .chain((ids) => {
    const unknownId = nid(0xfff);
    const someId = fc.constantFrom(...ids, unknownId);
    const nodes = fc.tuple(
      ...ids.map((id) =>
        fc.record({
          node_id: fc.constant(id),
          tier: often("paired" as const, fc.constantFrom("discovered" as const, "pinned" as const)),
          liveness: often("alive" as const, fc.constantFrom("suspect" as const, "dead" as const, "unknown" as const)),
          facts: fc.oneof({ arbitrary: facts(id), weight: 10 }, { arbitrary: fc.constant(null), weight: 1 }),
          facts_expire_at_ms: often(NOW + 300_000, fc.integer({ min: NOW - 10, max: NOW + 300_000 })),
        }),
      ),
    );
    const gate = fc.tuple(...ids.map(() => often("permit", fc.constantFrom("deny", "missing")))).map((vs) => {
      const g: Record<string, { verdict: "permit" | "deny"; reason: string }> = {};
      vs.forEach((v, i) => {
        const id = ids[i] as string;
        if (v !== "missing")
          g[id] = { verdict: v as "permit" | "deny", reason: v === "deny" ? "default deny" : "test-agent" };
      });
      return g;
    });
    const spec = fc.record({
      name: fc.constant("triage"),
      kind: fc.constant("agent"),
      package_id: fc.constant(PACKAGE_ID),
      variants: fc
        .array(
          fc.record({
            arch: often("aarch64" as const, fc.constantFrom(...VARIANT_ARCH)),
            os: often("linux" as const, fc.constantFrom("any" as const, "darwin" as const)),
            interp: often(false, fc.constant(true)),
          }),
          {
            minLength: 1,
            maxLength: 3,
          },
        )
        .map((vs) =>
          vs.map((v, i) => ({
            id: `v${i}`,
            arch: v.arch,
            os: v.os,
            entry: { program: v.interp ? "@python3" : "bin/agent" },
          })),
        ),
      requirements: often([], fc.array(requirement, { maxLength: 2 })),
      preferences: fc.array(fc.record({ requirement, weight: fc.integer({ min: 1, max: 1000 }) }), { maxLength: 2 }),
      memory_bytes: often(0, fc.integer({ min: 0, max: 2 ** 33 })),
      uses_accelerator: fc.boolean(),
      policy: fc.record({
        min_tier: often("paired" as const, fc.constantFrom("discovered" as const, "pinned" as const)),
        labels: often([], fc.subarray([...LABELS])),
        excludes: often([], fc.subarray([...LABELS])),
        sticky: fc.boolean(),
      }),
      perf: fc.option(
        fc.record({
          metric: fc.constantFrom("tps", "latency"),
          direction: fc.constantFrom("lower" as const, "higher" as const),
        }),
        {
          nil: null,
        },
      ),
      refs: fc.constant(null).map(() => [PACKAGE_ID, SIGNER]),
    });
    const request = fc.record({
      spec,
      pin: often(null, someId),
      prefer: fc.subarray([...ids, unknownId], { maxLength: Math.min(3, ids.length + 1) }),
      avoid: fc.subarray([...ids, unknownId], { maxLength: Math.min(3, ids.length + 1) }),
      allow_emulated: fc.boolean(),
      current_node: fc.option(someId, { nil: null }),
      weights: fc.record({
        execution: fc.record({ native: weight, fallback: weight, emulated: weight }),
        accel_fit: weight,
        perf: weight,
        load: weight,
        sticky: weight,
        stickiness: weight,
        fallback_boards: fc.subarray([...BOARDS]),
      }),
      gate,
    });
    const cluster = fc.record({
      now_ms: fc.constant(NOW),
      revoked_nodes: often([], fc.subarray(ids, { maxLength: Math.min(1, ids.length) })),
      revoked_refs: often(
        [],
        fc.constantFrom(PACKAGE_ID, SIGNER).map((r) => [r]),
      ),
      instances: fc.array(
        fc.record({
          node_id: someId,
          name: fc.constantFrom("indexer", "web", "db"),
          labels: fc.subarray([...LABELS]),
          excludes: fc.subarray([...LABELS]),
          memory_bytes: fc.integer({ min: 0, max: 2 ** 32 }),
          placed_at_ms: fc.integer({ min: NOW - 200_000, max: NOW }),
        }),
        { maxLength: 4 },
      ),
    });
    return fc.record({ request, nodes, cluster });
  })
  .map((d): Draft => d);

export const placementInput: fc.Arbitrary<PlacementInput> = inputDraft.map((d) => placementInputSchema.parse(d));
