/**
 * Capabilities and requirement matching (spec/mesh.md §6.3).
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
import { err, ok, type Result } from "../../kit/result.js";
import {
  type AttrValue,
  type Capability,
  type NodeFacts,
  PROVENANCE_RANK,
  type Predicate,
  type Requirement,
} from "./inputs.js";

/**
 * The capabilities of one node, as matching asks for them. Exact ids are answered straight from the facts (by a
 * lookup resolved once per requirement, see `prepareRequirement`), without materialising every derived capability
 * (the common case, and the engine's hot path); the full list is built once, on first need, for prefix
 * requirements. A class only to hold that lazily built list: one small object per node and decision.
 */
export class CapabilityIndex {
  private everything: readonly Capability[] | null = null;

  constructor(readonly facts: NodeFacts) {}

  withId(id: string): readonly Capability[] {
    return capabilitiesWithId(this.facts, id);
  }

  all(): readonly Capability[] {
    if (this.everything === null) this.everything = capabilitiesOf(this.facts);
    return this.everything;
  }
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
    if (r.route === "native")
      caps.push({ id: "runtime.native", attrs: { arches: [...r.arches] }, provenance: "probed" });
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

/** Reads the capabilities with one exact id from a node's facts. */
export type CapabilityLookup = (facts: NodeFacts) => readonly Capability[];

/** The capabilities of one kind a node has under one id, `null` for none. */
type DerivedLookup = (facts: NodeFacts) => Capability[] | null;

function nonEmpty(list: Capability[]): Capability[] | null {
  return list.length > 0 ? list : null;
}

/**
 * The derived capabilities (typed facts) an exact id can name, with the id taken apart once: which fact it reads
 * and with which key. `null` when the id names no typed fact (only accelerators and extra capabilities can match).
 * Each answer is allocated at its size (a one-element literal for the single-valued facts): this runs for every
 * requirement on every node.
 */
function derivedLookup(id: string): DerivedLookup | null {
  if (id.startsWith("cpu.arch.")) {
    const arch = id.slice(9);
    return (facts) => (facts.arch === arch ? [{ id, attrs: { count: facts.cpu.count }, provenance: "probed" }] : null);
  }
  if (id.startsWith("os.")) {
    const os = id.slice(3);
    return (facts) => (facts.os === os ? [{ id, attrs: {}, provenance: "probed" }] : null);
  }
  if (id.startsWith("node.class.")) {
    const board = id.slice(11);
    return (facts) => (facts.board === board ? [{ id, attrs: {}, provenance: "probed" }] : null);
  }
  if (id === "mem.system") {
    return (facts) => [
      {
        id,
        attrs: { total_bytes: facts.memory.total_bytes, available_bytes: facts.memory.available_bytes },
        provenance: "probed",
      },
    ];
  }
  if (id === "runtime.native") {
    return (facts) =>
      nonEmpty(
        facts.routes
          .filter((r) => r.route === "native")
          .map((r) => ({ id, attrs: { arches: [...r.arches] }, provenance: "probed" })),
      );
  }
  if (id.startsWith("runtime.emulated.")) {
    const via = id.slice(17);
    return (facts) => {
      const out: Capability[] = [];
      for (const r of facts.routes)
        if (r.route === "emulated" && r.via === via)
          out.push({ id, attrs: { arches: [...r.arches] }, provenance: r.provenance });
      return nonEmpty(out);
    };
  }
  if (id.startsWith("runtime.interp.")) {
    const name = id.slice(15);
    return (facts) =>
      nonEmpty(
        facts.interpreters
          .filter((i) => i.name === name)
          .map((i) => ({ id, attrs: { version: i.version }, provenance: i.provenance })),
      );
  }
  if (id.startsWith("label.")) {
    const key = id.slice(6);
    return (facts) =>
      Object.hasOwn(facts.labels, key)
        ? [{ id, attrs: { value: facts.labels[key] ?? "" }, provenance: "claimed" }]
        : null;
  }
  if (id.startsWith("perf.")) {
    const metric = id.slice(5);
    return (facts) =>
      nonEmpty(
        facts.perf
          .filter((p) => p.metric === metric)
          .map((p) => ({
            id,
            attrs: { subject: p.subject, value_milli: p.value_milli, direction: p.direction },
            provenance: p.provenance,
          })),
      );
  }
  return null;
}

/** `list` with `c` appended, allocating only when there was none: most lookups find nothing beyond the typed facts. */
function withOne(list: Capability[] | null, c: Capability): Capability[] {
  if (list === null) return [c];
  list.push(c);
  return list;
}

/**
 * The lookup for one exact id: the same answer as filtering `capabilitiesOf(facts)`, without building that list.
 * Resolving the id costs a few string tests, so the engine resolves each requirement's id once per decision.
 */
export function capabilityLookup(id: string): CapabilityLookup {
  const derived = derivedLookup(id);
  return (facts) => {
    let out = derived === null ? null : derived(facts);
    for (const a of facts.accelerators) {
      if (a.id === id)
        out = withOne(out, { id, attrs: { mem_bytes: a.mem_bytes, count: a.count }, provenance: a.provenance });
    }
    for (const c of facts.capabilities) if (c.id === id) out = withOne(out, c);
    return out ?? NONE;
  };
}

/** The capabilities with exactly this id; the same as filtering `capabilitiesOf(facts)`, without building it. */
export function capabilitiesWithId(facts: NodeFacts, id: string): readonly Capability[] {
  return capabilityLookup(id)(facts);
}

export function indexCapabilities(facts: NodeFacts): CapabilityIndex {
  return new CapabilityIndex(facts);
}

/** How a requirement names what it wants, for messages: `accel.gpu.nvidia` or `accel.gpu.*`. */
export function selectorOf(req: Requirement): string {
  return req.id !== undefined ? req.id : `${req.id_prefix}.*`;
}

/**
 * A requirement made ready to be checked against many nodes: its selector worded and its capability lookup
 * resolved once (per decision), so each node only reads its own facts.
 */
export interface PreparedRequirement {
  readonly requirement: Requirement;
  /** How messages name it: `accel.gpu.nvidia` or `accel.gpu.*`. */
  readonly selector: string;
  readonly minProvenanceRank: number;
  /** The node's capabilities named by the `id`, or under the `id_prefix` on a dot boundary. */
  readonly select: (index: CapabilityIndex) => readonly Capability[];
}

export function prepareRequirement(req: Requirement): PreparedRequirement {
  if (req.id !== undefined) {
    const lookup = capabilityLookup(req.id);
    return {
      requirement: req,
      selector: req.id,
      minProvenanceRank: PROVENANCE_RANK[req.min_provenance],
      select: (index) => lookup(index.facts),
    };
  }
  const prefix = req.id_prefix ?? "";
  const dotted = `${prefix}.`;
  return {
    requirement: req,
    selector: selectorOf(req),
    minProvenanceRank: PROVENANCE_RANK[req.min_provenance],
    select: (index) => index.all().filter((c) => c.id === prefix || c.id.startsWith(dotted)),
  };
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

/** Met, or why not (in explain's vocabulary: `cpu.arch.aarch64 not present`). */
export type RequirementCheck = Result<void>;

/** One frozen answer for every met requirement: this runs per requirement per node per decision. */
const MET: RequirementCheck = Object.freeze(ok());

function allHold(cap: Capability, where: readonly Predicate[]): boolean {
  for (const p of where) if (!predicateHolds(cap, p)) return false;
  return true;
}

/** `checkPreparedRequirement` for one requirement checked once (tests, and callers outside a decision). */
export function checkRequirement(index: CapabilityIndex, req: Requirement): RequirementCheck {
  return checkPreparedRequirement(index, prepareRequirement(req));
}

/** Whether the node meets the requirement, with the failure worded by `whyUnmet` when it does not. */
export function checkPreparedRequirement(index: CapabilityIndex, prepared: PreparedRequirement): RequirementCheck {
  return meetsRequirement(index, prepared) ? MET : err(whyUnmet(index, prepared));
}

/**
 * §6.3: met by `count` distinct satisfying capabilities (at least `min_provenance`), or by one whose own `count`
 * attribute is at least `count`. One pass, no intermediate lists, no words: this runs for every requirement and
 * preference on every node of every decision, and a preference only needs the yes or no.
 */
export function meetsRequirement(index: CapabilityIndex, prepared: PreparedRequirement): boolean {
  const req = prepared.requirement;
  let matching = 0;
  for (const c of prepared.select(index)) {
    if (PROVENANCE_RANK[c.provenance] < prepared.minProvenanceRank || !allHold(c, req.where)) continue;
    matching += 1;
    const n = c.attrs.count;
    if (matching >= req.count || (typeof n === "number" && n >= req.count)) return true;
  }
  return false;
}

/** For a requirement the node does not meet: the first thing that stood in the way, in the order a reader checks. */
function whyUnmet(index: CapabilityIndex, prepared: PreparedRequirement): string {
  const req = prepared.requirement;
  const sel = prepared.selector;
  const named = prepared.select(index);
  if (named.length === 0) return `${sel} not present`;
  const trusted = named.filter((c) => PROVENANCE_RANK[c.provenance] >= prepared.minProvenanceRank);
  const first = trusted[0];
  if (first === undefined) return `${sel} is only ${named[0]?.provenance}, ${req.min_provenance} required`;
  const matching = trusted.filter((c) => allHold(c, req.where)).length;
  if (matching === 0) {
    const failed = req.where.find((p) => !predicateHolds(first, p));
    const shown = failed ? `${failed.attr} ${failed.op} ${showValue(failed.value)}` : "its conditions";
    return `${sel} does not meet ${shown}`;
  }
  return `${sel} needs count ${req.count}, ${matching} present`;
}
