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

/**
 * The capabilities of one node, as matching asks for them. Exact ids are answered straight from the facts,
 * without materialising every derived capability (the common case, and the engine's hot path); the full list
 * is built once, on first need, for prefix requirements.
 */
export interface CapabilityIndex {
  withId(id: string): readonly Capability[];
  all(): readonly Capability[];
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

const NONE: readonly Capability[] = [];

/** The capabilities with exactly this id; the same as filtering `capabilitiesOf(facts)`, without building it. */
export function capabilitiesWithId(facts: NodeFacts, id: string): readonly Capability[] {
  const out: Capability[] = [];
  if (id.startsWith("cpu.arch.")) {
    if (id.slice(9) === facts.arch) out.push({ id, attrs: { count: facts.cpu.count }, provenance: "probed" });
  } else if (id.startsWith("os.")) {
    if (id.slice(3) === facts.os) out.push({ id, attrs: {}, provenance: "probed" });
  } else if (id.startsWith("node.class.")) {
    if (id.slice(11) === facts.board) out.push({ id, attrs: {}, provenance: "probed" });
  } else if (id === "mem.system") {
    out.push({
      id,
      attrs: { total_bytes: facts.memory.total_bytes, available_bytes: facts.memory.available_bytes },
      provenance: "probed",
    });
  } else if (id === "runtime.native") {
    for (const r of facts.routes) if (r.route === "native") out.push({ id, attrs: { arches: [...r.arches] }, provenance: "probed" });
  } else if (id.startsWith("runtime.emulated.")) {
    const via = id.slice(17);
    for (const r of facts.routes) {
      if (r.route === "emulated" && r.via === via) out.push({ id, attrs: { arches: [...r.arches] }, provenance: r.provenance });
    }
  } else if (id.startsWith("runtime.interp.")) {
    const name = id.slice(15);
    for (const i of facts.interpreters) if (i.name === name) out.push({ id, attrs: { version: i.version }, provenance: i.provenance });
  } else if (id.startsWith("label.")) {
    const key = id.slice(6);
    if (Object.hasOwn(facts.labels, key)) out.push({ id, attrs: { value: facts.labels[key] ?? "" }, provenance: "claimed" });
  } else if (id.startsWith("perf.")) {
    const metric = id.slice(5);
    for (const p of facts.perf) {
      if (p.metric === metric) {
        out.push({ id, attrs: { subject: p.subject, value_milli: p.value_milli, direction: p.direction }, provenance: p.provenance });
      }
    }
  }
  for (const a of facts.accelerators) {
    if (a.id === id) out.push({ id, attrs: { mem_bytes: a.mem_bytes, count: a.count }, provenance: a.provenance });
  }
  for (const c of facts.capabilities) if (c.id === id) out.push(c);
  return out.length > 0 ? out : NONE;
}

export function indexCapabilities(facts: NodeFacts): CapabilityIndex {
  let all: readonly Capability[] | null = null;
  return {
    withId: (id) => capabilitiesWithId(facts, id),
    all: () => {
      if (all === null) all = capabilitiesOf(facts);
      return all;
    },
  };
}

/** How a requirement names what it wants, for messages: `accel.gpu.nvidia` or `accel.gpu.*`. */
export function selectorOf(req: Requirement): string {
  return req.id !== undefined ? req.id : `${req.id_prefix}.*`;
}

/** Capabilities named by the requirement's `id`, or under its `id_prefix` on a dot boundary. */
export function selected(index: CapabilityIndex, req: Requirement): readonly Capability[] {
  if (req.id !== undefined) return index.withId(req.id);
  const prefix = req.id_prefix ?? "";
  const dotted = `${prefix}.`;
  return index.all().filter((c) => c.id === prefix || c.id.startsWith(dotted));
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

export type RequirementCheck = { readonly ok: true } | { readonly ok: false; readonly why: string };

const MET: RequirementCheck = Object.freeze({ ok: true });

function allHold(cap: Capability, where: readonly Predicate[]): boolean {
  for (const p of where) if (!predicateHolds(cap, p)) return false;
  return true;
}

/**
 * §6.3: met by `count` distinct satisfying capabilities, or by one whose own `count` attribute is at least
 * `count`. The failure names the first thing that stood in the way, in the order a reader would check it.
 * One pass and no intermediate lists: this runs for every requirement on every node of every decision.
 */
export function checkRequirement(index: CapabilityIndex, req: Requirement): RequirementCheck {
  const named = selected(index, req);
  if (named.length === 0) return { ok: false, why: `${selectorOf(req)} not present` };
  const min = PROVENANCE_RANK[req.min_provenance];
  let firstTrusted: Capability | null = null;
  let matching = 0;
  for (const c of named) {
    if (PROVENANCE_RANK[c.provenance] < min) continue;
    if (firstTrusted === null) firstTrusted = c;
    if (!allHold(c, req.where)) continue;
    matching += 1;
    const n = c.attrs.count;
    if (matching >= req.count || (typeof n === "number" && n >= req.count)) return MET;
  }
  const sel = selectorOf(req);
  if (firstTrusted === null) {
    return { ok: false, why: `${sel} is only ${named[0]?.provenance}, ${req.min_provenance} required` };
  }
  if (matching === 0) {
    const first = firstTrusted;
    const failed = req.where.find((p) => !predicateHolds(first, p));
    const shown = failed ? `${failed.attr} ${failed.op} ${showValue(failed.value)}` : "its conditions";
    return { ok: false, why: `${sel} does not meet ${shown}` };
  }
  return { ok: false, why: `${sel} needs count ${req.count}, ${matching} present` };
}
