import { describe, expect, it } from "vitest";
import { type FactsDraft, factsFor, nid } from "../../../test/support/placement/fixtures.js";
import { indexCapabilities } from "./capabilities.js";
import { nodeFactsSchema, variantSchema } from "./inputs.js";
import { chooseRoute, prepareVariants, type RouteFit } from "./route.js";

type VariantDraft = Parameters<typeof variantSchema.parse>[0];

function route(
  variants: VariantDraft[],
  facts: Partial<FactsDraft>,
  opts: { allowEmulated?: boolean; fallbackBoards?: string[] } = {},
): RouteFit {
  const parsed = nodeFactsSchema.parse(factsFor(nid(1), facts));
  return chooseRoute(prepareVariants(variants.map((v) => variantSchema.parse(v))), indexCapabilities(parsed), {
    allowEmulated: opts.allowEmulated ?? false,
    fallbackBoards: opts.fallbackBoards ?? ["dev"],
  });
}

const arm = { id: "aarch64-linux", arch: "aarch64", os: "linux", entry: { program: "bin/a" } } as const;
const x86 = { id: "x86_64-linux", arch: "x86_64", os: "linux", entry: { program: "bin/x" } } as const;
const py = { id: "py", arch: "any", os: "any", entry: { program: "@python3" } } as const;
const mac = { id: "aarch64-darwin", arch: "aarch64", os: "darwin", entry: { program: "bin/m" } } as const;
const qemu = { route: "emulated" as const, via: "qemu-user", arches: ["x86_64" as const] };
const native = (arch: "aarch64" | "x86_64" | "armv7") => ({ route: "native" as const, arches: [arch] });

const nativeFit = (variant: string, execution: "native" | "fallback" = "native") => ({
  kind: "fits",
  variant,
  route: "native",
  via: null,
  execution,
});

// spec/mesh.md §8.4, one row per rule.
const table: {
  rule: string;
  variants: VariantDraft[];
  facts: Partial<FactsDraft>;
  allow?: boolean;
  boards?: string[];
  expected: RouteFit;
}[] = [
  {
    rule: "a variant of the node's arch and os fits natively",
    variants: [arm],
    facts: {},
    expected: nativeFit("aarch64-linux") as RouteFit,
  },
  {
    rule: "an architecture-independent variant fits natively when its interpreter is declared",
    variants: [py],
    facts: { interpreters: [{ name: "python3", version: "3.11" }] },
    expected: nativeFit("py") as RouteFit,
  },
  {
    rule: "an @interpreter variant does not fit a node that does not declare it",
    variants: [py],
    facts: {},
    expected: { kind: "none", misfits: [{ variant: "py", why: "runtime.interp.python3 not present" }] },
  },
  {
    rule: "a variant for another os does not fit",
    variants: [mac],
    facts: {},
    expected: { kind: "none", misfits: [{ variant: "aarch64-darwin", why: "os.darwin not present" }] },
  },
  {
    rule: "a node without a native route fits no variant natively",
    variants: [arm],
    facts: { routes: [] },
    expected: { kind: "none", misfits: [{ variant: "aarch64-linux", why: "runtime.native not present" }] },
  },
  {
    rule: "a variant's own requires must hold",
    variants: [{ ...arm, requires: [{ id: "accel.npu.hailo8" }] }],
    facts: {},
    expected: { kind: "none", misfits: [{ variant: "aarch64-linux", why: "accel.npu.hailo8 not present" }] },
  },
  {
    rule: "another arch without an emulated route listing it does not fit",
    variants: [x86],
    facts: {},
    expected: { kind: "none", misfits: [{ variant: "x86_64-linux", why: "cpu.arch.x86_64 not present" }] },
  },
  {
    rule: "another arch with an emulated route fits emulated when the order allows emulation",
    variants: [x86],
    facts: { routes: [native("aarch64"), qemu] },
    allow: true,
    expected: { kind: "fits", variant: "x86_64-linux", route: "emulated", via: "qemu-user", execution: "emulated" },
  },
  {
    rule: "another arch with an emulated route is not allowed without allow_emulated",
    variants: [x86],
    facts: { routes: [native("aarch64"), qemu] },
    expected: { kind: "emulation_not_allowed", emulated: ["x86_64-linux"] },
  },
  {
    rule: "the first native fit wins even when an emulated fit is declared before it",
    variants: [x86, arm],
    facts: { routes: [native("aarch64"), qemu] },
    allow: true,
    expected: nativeFit("aarch64-linux") as RouteFit,
  },
  {
    rule: "the first native fit in declared order wins among native fits",
    variants: [{ ...py, id: "any-linux", entry: { program: "bin/any" } }, arm],
    facts: {},
    expected: nativeFit("any-linux") as RouteFit,
  },
  {
    rule: "an emulated fit still needs the variant's os",
    variants: [{ ...x86, os: "darwin" }],
    facts: { routes: [native("aarch64"), qemu] },
    allow: true,
    expected: { kind: "none", misfits: [{ variant: "x86_64-linux", why: "os.darwin not present" }] },
  },
  {
    rule: "a native route on a dev board is the fallback execution tier",
    variants: [arm],
    facts: { board: "dev" },
    expected: nativeFit("aarch64-linux", "fallback") as RouteFit,
  },
  {
    rule: "the fallback boards are configuration",
    variants: [arm],
    facts: { board: "pi3" },
    boards: ["pi3"],
    expected: nativeFit("aarch64-linux", "fallback") as RouteFit,
  },
];

describe("variant and route (spec/mesh.md §8.4)", () => {
  it.each(table)("$rule", ({ variants, facts, allow, boards, expected }) => {
    expect(route(variants, facts, { allowEmulated: allow ?? false, fallbackBoards: boards ?? ["dev"] })).toEqual(
      expected,
    );
  });

  it("an emulated fit is never chosen on a node where any variant fits natively", () => {
    for (const allow of [false, true]) {
      const fit = route([x86, arm, x86], { routes: [native("aarch64"), qemu] }, { allowEmulated: allow });
      expect(fit).toMatchObject({ kind: "fits", route: "native" });
    }
  });
});
