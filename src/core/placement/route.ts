/**
 * Variant and route for one node (spec/mesh.md §8.4).
 *
 * A variant fits *natively* when its arch is `any` or the node's, its os is `any` or the node's, the node
 * advertises a native route, any `@interpreter` is declared, and the variant's own `requires` hold. It fits
 * *emulated* when its arch is a real one that differs from the node's, an emulated route of the node lists that
 * arch, and the rest holds. The chosen variant is the first native fit in declared order; only if the order
 * allows emulation, the first emulated fit.
 *
 * Invariant (structural): a node with any native fit is never given an emulated route. Whether emulation is used
 * at all across the cluster (only when no native route fits anywhere) is decided later, by the pool in select.ts.
 */
import {
  type CapabilityIndex,
  checkPreparedRequirement,
  type PreparedRequirement,
  prepareRequirement,
} from "./capabilities.js";
import type { NodeFacts, Variant } from "./inputs.js";
import type { ExecutionTier } from "./outputs.js";

export type RouteFit =
  | {
      readonly kind: "fits";
      readonly variant: string;
      readonly route: "native";
      readonly via: null;
      readonly execution: Exclude<ExecutionTier, "emulated">;
    }
  | {
      readonly kind: "fits";
      readonly variant: string;
      readonly route: "emulated";
      readonly via: string;
      readonly execution: "emulated";
    }
  /** Only emulated fits exist and the order did not allow emulation. */
  | { readonly kind: "emulation_not_allowed"; readonly emulated: readonly string[] }
  /** No variant fits by any route; one line per variant says why. */
  | { readonly kind: "none"; readonly misfits: readonly { readonly variant: string; readonly why: string }[] };

/** What every node's route choice shares within one decision. */
export interface RouteContext {
  readonly allowEmulated: boolean;
  readonly fallbackBoards: readonly string[];
}

/** `@python3` → `python3`; a pinned file needs no interpreter. */
export function interpreterOf(variant: Variant): string | null {
  return variant.entry.program.startsWith("@") ? variant.entry.program.slice(1) : null;
}

/** A variant as every node's route choice reads it, worked out once per decision. */
export interface PreparedVariant {
  readonly variant: Variant;
  readonly interpreter: string | null;
  readonly requires: readonly PreparedRequirement[];
}

export function prepareVariants(variants: readonly Variant[]): PreparedVariant[] {
  return variants.map((variant) => ({
    variant,
    interpreter: interpreterOf(variant),
    requires: variant.requires.map(prepareRequirement),
  }));
}

/** Lists on the hot path are only allocated once something goes in them. */
function append<T>(list: T[] | null, item: T): T[] {
  if (list === null) return [item];
  list.push(item);
  return list;
}

/**
 * Everything that must hold whatever the route, as failure texts in the §6.3 capability vocabulary; `null` when
 * all holds (the common case allocates nothing).
 */
function routeIndependentFailures(prepared: PreparedVariant, index: CapabilityIndex): string[] | null {
  const { variant, interpreter } = prepared;
  const facts = index.facts;
  let why: string[] | null = null;
  if (variant.os !== "any" && variant.os !== facts.os) why = [`os.${variant.os} not present`];
  if (interpreter !== null && !facts.interpreters.some((i) => i.name === interpreter)) {
    why = append(why, `runtime.interp.${interpreter} not present`);
  }
  for (const req of prepared.requires) {
    const check = checkPreparedRequirement(index, req);
    if (!check.ok) why = append(why, check.error);
  }
  return why;
}

function emulatorFor(facts: NodeFacts, arch: string): string | null {
  for (const r of facts.routes) {
    if (r.route === "emulated" && (r.arches as readonly string[]).includes(arch)) return r.via;
  }
  return null;
}

function hasNativeRoute(facts: NodeFacts): boolean {
  for (const r of facts.routes) if (r.route === "native") return true;
  return false;
}

/** The route for the node whose capabilities `index` reads, trying `variants` (see `prepareVariants`) in order. */
export function chooseRoute(variants: readonly PreparedVariant[], index: CapabilityIndex, ctx: RouteContext): RouteFit {
  const facts = index.facts;
  const hasNative = hasNativeRoute(facts);
  let emulatedFits: { variant: string; via: string }[] | null = null;
  let misfits: { variant: string; why: string }[] | null = null;
  for (const prepared of variants) {
    const { variant } = prepared;
    const common = routeIndependentFailures(prepared, index);
    const archMatches = variant.arch === "any" || variant.arch === facts.arch;
    if (archMatches) {
      if (hasNative && common === null) {
        const execution = ctx.fallbackBoards.includes(facts.board) ? "fallback" : "native";
        return { kind: "fits", variant: variant.id, route: "native", via: null, execution };
      }
      const why = hasNative ? (common ?? []) : ["runtime.native not present", ...(common ?? [])];
      misfits = append(misfits, { variant: variant.id, why: why.join("; ") });
      continue;
    }
    const via = emulatorFor(facts, variant.arch);
    if (via === null) {
      misfits = append(misfits, {
        variant: variant.id,
        why: [`cpu.arch.${variant.arch} not present`, ...(common ?? [])].join("; "),
      });
    } else if (common !== null) {
      misfits = append(misfits, { variant: variant.id, why: common.join("; ") });
    } else {
      emulatedFits = append(emulatedFits, { variant: variant.id, via });
    }
  }
  const firstEmulated = emulatedFits?.[0];
  if (emulatedFits === null || firstEmulated === undefined) return { kind: "none", misfits: misfits ?? [] };
  if (!ctx.allowEmulated) return { kind: "emulation_not_allowed", emulated: emulatedFits.map((f) => f.variant) };
  return {
    kind: "fits",
    variant: firstEmulated.variant,
    route: "emulated",
    via: firstEmulated.via,
    execution: "emulated",
  };
}
