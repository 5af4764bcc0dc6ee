import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { placementInput } from "../../../test/support/placement/arbitraries.js";
import { factsFor, nid } from "../../../test/support/placement/fixtures.js";
import { capabilitiesOf, capabilitiesWithId, checkRequirement, indexCapabilities } from "./capabilities.js";
import { nodeFactsSchema, type Requirement, requirementSchema } from "./inputs.js";

const facts = nodeFactsSchema.parse(
  factsFor(nid(1), {
    arch: "aarch64",
    board: "pi5",
    cpu: { count: 4, load1_milli: 0 },
    memory: { total_bytes: 8000, available_bytes: 4000 },
    accelerators: [
      { id: "accel.npu.hailo8", mem_bytes: 0, count: 1, provenance: "probed" },
      { id: "accel.gpu.nvidia", mem_bytes: 8192, count: 2, provenance: "claimed" },
    ],
    routes: [
      { route: "native", arches: ["aarch64"] },
      { route: "emulated", via: "qemu-user", arches: ["x86_64", "armv7"] },
    ],
    interpreters: [{ name: "python3", version: "3.11.2" }],
    labels: { zone: "attic" },
    perf: [{ metric: "tokens_per_s", subject: "llama", value_milli: 12_000, direction: "higher", measured_at_ms: 1 }],
    capabilities: [
      { id: "camera.csi", attrs: { modes: ["1080p", "4k"] } },
      { id: "camera.usb", attrs: { modes: ["720p"] } },
      { id: "cameraman" },
    ],
  }),
);
const index = indexCapabilities(facts);

function check(req: Partial<Requirement> & Record<string, unknown>) {
  return checkRequirement(index, requirementSchema.parse(req));
}

describe("derived capabilities (spec/mesh.md §6.3)", () => {
  it("exposes every typed fact under its capability id", () => {
    const ids = capabilitiesOf(facts).map((c) => c.id);
    expect(ids).toEqual([
      "cpu.arch.aarch64",
      "os.linux",
      "node.class.pi5",
      "mem.system",
      "accel.npu.hailo8",
      "accel.gpu.nvidia",
      "runtime.native",
      "runtime.emulated.qemu-user",
      "runtime.interp.python3",
      "label.zone",
      "perf.tokens_per_s",
      "camera.csi",
      "camera.usb",
      "cameraman",
    ]);
  });
});

describe("exact-id lookup", () => {
  it("answers the same capabilities as filtering the full derived list, for any facts and id", () => {
    fc.assert(
      fc.property(
        placementInput,
        fc.constantFrom("os.darwin", "label.nope", "perf.nope", "cpu.arch.armv7", "runtime.emulated.box64"),
        (input, extra) => {
          for (const n of input.nodes) {
            if (n.facts === null) continue;
            const all = capabilitiesOf(n.facts);
            for (const id of new Set([...all.map((c) => c.id), extra])) {
              expect(capabilitiesWithId(n.facts, id)).toEqual(all.filter((c) => c.id === id));
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

// One row per matching rule of §6.3.
const table: { rule: string; req: Record<string, unknown>; ok: boolean; why?: string }[] = [
  { rule: "an exact id matches that capability", req: { id: "os.linux" }, ok: true },
  { rule: "an absent id fails as not present", req: { id: "os.darwin" }, ok: false, why: "os.darwin not present" },
  { rule: "a prefix matches on a dot boundary", req: { id_prefix: "camera" }, ok: true },
  {
    rule: "a prefix does not match inside a component",
    req: { id_prefix: "camera.cs" },
    ok: false,
    why: "camera.cs.* not present",
  },
  {
    rule: "`eq` compares a string attribute",
    req: { id: "label.zone", where: [{ attr: "value", op: "eq", value: "attic" }] },
    ok: true,
  },
  {
    rule: "`eq` fails on a different value",
    req: { id: "label.zone", where: [{ attr: "value", op: "eq", value: "cellar" }] },
    ok: false,
    why: "label.zone does not meet value eq cellar",
  },
  {
    rule: "`gte` compares integers",
    req: { id: "mem.system", where: [{ attr: "available_bytes", op: "gte", value: 4000 }] },
    ok: true,
  },
  {
    rule: "`gte` fails below the bound",
    req: { id: "mem.system", where: [{ attr: "available_bytes", op: "gte", value: 4001 }] },
    ok: false,
    why: "mem.system does not meet available_bytes gte 4001",
  },
  {
    rule: "`lte` compares integers",
    req: { id: "mem.system", where: [{ attr: "total_bytes", op: "lte", value: 8000 }] },
    ok: true,
  },
  {
    rule: "`in` holds when the attribute is one of the values",
    req: { id: "label.zone", where: [{ attr: "value", op: "in", value: ["attic", "hall"] }] },
    ok: true,
  },
  {
    rule: "`has` holds when an array attribute contains the value",
    req: { id: "runtime.emulated.qemu-user", where: [{ attr: "arches", op: "has", value: "armv7" }] },
    ok: true,
  },
  {
    rule: "`has` fails when the array lacks the value",
    req: { id: "runtime.native", where: [{ attr: "arches", op: "has", value: "x86_64" }] },
    ok: false,
    why: "runtime.native does not meet arches has x86_64",
  },
  {
    rule: "a missing attribute fails the predicate",
    req: { id: "os.linux", where: [{ attr: "version", op: "gte", value: 1 }] },
    ok: false,
    why: "os.linux does not meet version gte 1",
  },
  {
    rule: "a numeric comparison against a string attribute fails",
    req: { id: "label.zone", where: [{ attr: "value", op: "gte", value: 1 }] },
    ok: false,
    why: "label.zone does not meet value gte 1",
  },
  {
    rule: "`count` is met by that many distinct matching capabilities",
    req: { id_prefix: "camera", count: 2 },
    ok: true,
  },
  {
    rule: "`count` fails with fewer matching capabilities",
    req: { id_prefix: "camera", count: 3, where: [{ attr: "modes", op: "has", value: "720p" }] },
    ok: false,
    why: "camera.* needs count 3, 1 present",
  },
  {
    rule: "`count` is met by one capability whose count attribute is large enough",
    req: { id: "accel.gpu.nvidia", count: 2 },
    ok: true,
  },
  {
    rule: "the cpu count satisfies a count on the arch capability",
    req: { id: "cpu.arch.aarch64", count: 4 },
    ok: true,
  },
  {
    rule: "a claimed capability fails a probed minimum provenance",
    req: { id: "accel.gpu.nvidia", min_provenance: "probed" },
    ok: false,
    why: "accel.gpu.nvidia is only claimed, probed required",
  },
  {
    rule: "a probed capability meets a probed minimum provenance",
    req: { id: "accel.npu.hailo8", min_provenance: "probed" },
    ok: true,
  },
  {
    rule: "perf entries are measured by default",
    req: { id: "perf.tokens_per_s", min_provenance: "measured" },
    ok: true,
  },
];

describe("requirement matching (spec/mesh.md §6.3)", () => {
  it.each(table)("$rule", ({ req, ok, why }) => {
    const result = check(req);
    expect(result.ok).toBe(ok);
    if (!result.ok) expect(result.error).toBe(why);
  });

  it("a requirement names exactly one of id and id_prefix", () => {
    expect(requirementSchema.safeParse({ id: "a", id_prefix: "a" }).success).toBe(false);
    expect(requirementSchema.safeParse({}).success).toBe(false);
  });
});
