/**
 * Capabilities and requirement matching (mesh.md §6.3).
 *
 * A node's typed facts are exposed to matching as derived capabilities (`cpu.arch.aarch64`, `mem.system`,
 * `runtime.interp.python3`, `label.<key>`, …) next to the extra capabilities it declares, so a requirement never
 * needs to know which fact a capability came from. The failure text names the capability in that same
 * vocabulary (`cpu.arch.aarch64 not present`), which is what explain prints.
 *
 * Provenance of derived capabilities: the typed members a node probes itself (arch, os, board, memory, native
 * route) are `probed`; accelerators, interpreters and emulated routes carry their own; labels are configuration,
 * hence `claimed`; perf entries carry their own (`measured` by default).
 */
import {
  type AttrValue,
  type Capability,
  type NodeFacts,
  PROVENANCE_RANK,
  type Predicate,
  type Requirement,
} from "./inputs.js";

/** The capabilities of a node, grouped by id for exact lookups; `all` keeps them for prefix scans. */
export interface CapabilityIndex {
  readonly byId: ReadonlyMap<string, readonly Capability[]>;
  readonly all: readonly Capability[];
}

export function capabilitiesOf(facts: NodeFacts): Capability[] {
  const caps: Capability[] = [
    { id: `cpu.arch.${facts.arch}`, attrs: { count: facts.cpu.count }, provenance: "probed" },
    { id: `os.${facts.os}`, attrs: {}, provenance: "probed" },
    { id: `node.class.${facts.board}`, attrs: {}, provenance: "probed" },
    {
      id: "mem.system",
      attrs: { total_bytes: facts.memory.total_bytes, available_bytes: facts.memory.available_bytes },
      provenance: "probed",
    },
  ];
  for (const a of facts.accelerators) {
    caps.push({ id: a.id, attrs: { mem_bytes: a.mem_bytes, count: a.count }, provenance: a.provenance });
  }
  for (const r of facts.routes) {
    if (r.route === "native") caps.push({ id: "runtime.native", attrs: { arches: [...r.arches] }, provenance: "probed" });
    else caps.push({ id: `runtime.emulated.${r.via}`, attrs: { arches: [...r.arches] }, provenance: r.provenance });
  }
  for (const i of facts.interpreters) {
    caps.push({ id: `runtime.interp.${i.name}`, attrs: { version: i.version }, provenance: i.provenance });
  }
  for (const key of Object.keys(facts.labels).sort()) {
    caps.push({ id: `label.${key}`, attrs: { value: facts.labels[key] ?? "" }, provenance: "claimed" });
  }
  for (const p of facts.perf) {
    caps.push({
      id: `perf.${p.metric}`,
      attrs: { subject: p.subject, value_milli: p.value_milli, direction: p.direction },
      provenance: p.provenance,
    });
  }
  for (const c of facts.capabilities) caps.push(c);
  return caps;
}

export function indexCapabilities(caps: readonly Capability[]): CapabilityIndex {
  const byId = new Map<string, Capability[]>();
  for (const c of caps) {
    const list = byId.get(c.id);
    if (list) list.push(c);
    else byId.set(c.id, [c]);
  }
  return { byId, all: caps };
}

/** How a requirement names what it wants, for messages: `accel.gpu.nvidia` or `accel.gpu.*`. */
export function selectorOf(req: Requirement): string {
  return req.id !== undefined ? req.id : `${req.id_prefix}.*`;
}

/** Capabilities named by the requirement's `id`, or under its `id_prefix` on a dot boundary. */
export function selected(index: CapabilityIndex, req: Requirement): readonly Capability[] {
  if (req.id !== undefined) return index.byId.get(req.id) ?? [];
  const prefix = req.id_prefix ?? "";
  const dotted = `${prefix}.`;
  return index.all.filter((c) => c.id === prefix || c.id.startsWith(dotted));
}

function sameValue(a: AttrValue, b: AttrValue): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i]);
  }
  return a === b;
}

/** §6.3: a missing attribute fails the predicate; comparisons of mismatched types fail too. */
export function predicateHolds(cap: Capability, p: Predicate): boolean {
  const actual = cap.attrs[p.attr];
  if (actual === undefined) return false;
  switch (p.op) {
    case "eq":
      return sameValue(actual, p.value);
    case "gte":
      return typeof actual === "number" && typeof p.value === "number" && actual >= p.value;
    case "lte":
      return typeof actual === "number" && typeof p.value === "number" && actual <= p.value;
    case "in":
      return Array.isArray(p.value) && !Array.isArray(actual) && p.value.some((v) => v === actual);
    case "has":
      return Array.isArray(actual) && !Array.isArray(p.value) && actual.some((v) => v === p.value);
    default: {
      const unreachable: never = p.op;
      return unreachable;
    }
  }
}

function showValue(v: AttrValue): string {
  return Array.isArray(v) ? `[${v.join(", ")}]` : String(v);
}

/** The capabilities that satisfy everything in the requirement except `count`. */
export function satisfying(index: CapabilityIndex, req: Requirement): readonly Capability[] {
  const min = PROVENANCE_RANK[req.min_provenance];
  return selected(index, req).filter(
    (c) => PROVENANCE_RANK[c.provenance] >= min && req.where.every((p) => predicateHolds(c, p)),
  );
}

export type RequirementCheck = { readonly ok: true } | { readonly ok: false; readonly why: string };

/**
 * §6.3: met by `count` distinct satisfying capabilities, or by one whose own `count` attribute is at least
 * `count`. The failure names the first thing that stood in the way, in the order a reader would check it.
 */
export function checkRequirement(index: CapabilityIndex, req: Requirement): RequirementCheck {
  const sel = selectorOf(req);
  const named = selected(index, req);
  if (named.length === 0) return { ok: false, why: `${sel} not present` };
  const min = PROVENANCE_RANK[req.min_provenance];
  const trusted = named.filter((c) => PROVENANCE_RANK[c.provenance] >= min);
  if (trusted.length === 0) {
    return { ok: false, why: `${sel} is only ${named[0]?.provenance}, ${req.min_provenance} required` };
  }
  const matching = trusted.filter((c) => req.where.every((p) => predicateHolds(c, p)));
  if (matching.length === 0) {
    const first = trusted[0] as Capability;
    const failed = req.where.find((p) => !predicateHolds(first, p));
    const shown = failed ? `${failed.attr} ${failed.op} ${showValue(failed.value)}` : "its conditions";
    return { ok: false, why: `${sel} does not meet ${shown}` };
  }
  if (matching.length >= req.count) return { ok: true };
  if (matching.some((c) => typeof c.attrs.count === "number" && c.attrs.count >= req.count)) return { ok: true };
  return { ok: false, why: `${sel} needs count ${req.count}, ${matching.length} present` };
}
