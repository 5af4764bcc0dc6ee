/**
 * The gate's verdicts over a placement's whole view as one canonical document (issue 35; spec/audit-chain.md §12.1,
 * mesh.md §7.7): instead of one chained event per distinct verdict, the decision's event carries the summary's hash
 * (`gate.summary`) and the summary itself is stored beside the chain, keyed by that hash. The chain therefore grows
 * by a constant number of events per placement whatever the number of candidates, and every node's verdict is still
 * there, signed through the decision event's hash.
 *
 * Structural rules:
 * - the summary names every consulted node exactly once, under `nodes` (a JSON object, so the canonical form lists
 *   the nodes sorted, and the hash does not depend on the order the view listed them in);
 * - a node's full verdict is the verdict it points at with its own `node` put back: equal to the payload the gate
 *   built for it (`verdictOfNode`), so nothing the per-node events recorded is lost;
 * - the verdicts list holds each distinct verdict once, in the order of the first node (sorted) that has it;
 * - the hash is domain-separated (`berth.gate.summary.v1`, §5.4), so a summary can never be taken for a payload.
 *
 * Pure: no I/O; the shell stores the canonical text and the verifier recomputes the hash from it.
 */
import type { Result } from "../../kit/result.js";
import { canonicalJson, type JsonObject, type JsonValue, parseCanonical } from "../crypto/canonical.js";
import { isLowerHex } from "../crypto/hex.js";
import { taggedSha256Hex } from "../crypto/tagged.js";

export const GATE_SUMMARY_FORMAT = "berth.gate.summary.v1";

/** What the decision event records of its summary (payload member `gate`). */
export interface GateSummaryRef {
  /** 64 hex: `SHA-256(TAG("berth.gate.summary.v1") ‖ JCS(summary))`. */
  readonly summary: string;
  readonly action: string;
  readonly nodes: number;
  readonly permitted: number;
}

export interface GateSummary {
  /** The canonical text, exactly what is stored and hashed. */
  readonly canonical: string;
  readonly ref: GateSummaryRef;
}

/** §5.4: the hash of a summary's canonical text. */
export function gateSummaryHashOf(canonical: string): string {
  return taggedSha256Hex("berth.gate.summary.v1", canonical);
}

/**
 * One summary of the verdicts `action` got on each node: `verdict` is the payload the gate built for that node
 * without its `node` member. Nodes named twice keep the first verdict (a view never lists a node twice; the engine
 * refuses such input anyway). Verdicts are told apart by their canonical text, computed once per distinct object, so
 * a caller that hands the same object to the nodes with one verdict pays for one canonical form, not one per node.
 */
export function summariseVerdicts(
  action: string,
  consulted: ReadonlyArray<{ readonly node: string; readonly verdict: JsonObject }>,
): GateSummary {
  const byNode = new Map<string, JsonObject>();
  for (const { node, verdict } of consulted) if (!byNode.has(node)) byNode.set(node, verdict);
  const sortedNodes = [...byNode.keys()].sort();
  const verdicts: JsonObject[] = [];
  const textOf = new Map<JsonObject, string>();
  const indexOf = new Map<string, number>();
  const nodes: Record<string, number> = {};
  let permitted = 0;
  for (const node of sortedNodes) {
    const verdict = byNode.get(node) as JsonObject;
    // The canonical text is a verdict's identity: equal texts are equal verdicts, whatever the members' order.
    let key = textOf.get(verdict);
    if (key === undefined) {
      key = canonicalJson(verdict);
      textOf.set(verdict, key);
    }
    let index = indexOf.get(key);
    if (index === undefined) {
      index = verdicts.length;
      indexOf.set(key, index);
      verdicts.push(verdict);
    }
    nodes[node] = index;
    if (verdict.decision === "permit") permitted++;
  }
  const canonical = canonicalJson({ format: GATE_SUMMARY_FORMAT, action, nodes, verdicts });
  return { canonical, ref: { summary: gateSummaryHashOf(canonical), action, nodes: sortedNodes.length, permitted } };
}

/** A verdict payload without the node it names: what a summary holds once for every node with that verdict. */
export function verdictWithoutNode(payload: JsonObject): JsonObject {
  const { node: _named, ...verdict } = payload;
  return verdict;
}

/** A stored summary, read back: the nodes and the distinct verdicts they point at. */
export interface ParsedGateSummary {
  readonly action: string;
  readonly nodes: Readonly<Record<string, number>>;
  readonly verdicts: readonly JsonObject[];
}

/** Parses a stored summary's text, or says what is wrong with it. Does not check the hash (the caller knows which). */
export function parseGateSummary(text: string): Result<ParsedGateSummary> {
  const parsed = parseCanonical(text);
  if (!parsed.ok) return { ok: false, error: `the summary is not canonical JSON: ${parsed.error}` };
  const v = parsed.value as { [key: string]: JsonValue };
  if (typeof v !== "object" || v === null || Array.isArray(v) || v.format !== GATE_SUMMARY_FORMAT)
    return { ok: false, error: `the summary's format is not ${GATE_SUMMARY_FORMAT}` };
  if (typeof v.action !== "string") return { ok: false, error: "the summary names no action" };
  const verdicts = v.verdicts;
  const nodes = v.nodes;
  if (!Array.isArray(verdicts) || verdicts.some((x) => typeof x !== "object" || x === null || Array.isArray(x)))
    return { ok: false, error: "the summary's verdicts are not a list of objects" };
  if (typeof nodes !== "object" || nodes === null || Array.isArray(nodes))
    return { ok: false, error: "the summary's nodes are not an object" };
  for (const [node, index] of Object.entries(nodes)) {
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= verdicts.length)
      return { ok: false, error: `node ${node} points at no verdict` };
  }
  return {
    ok: true,
    value: { action: v.action, nodes: nodes as Record<string, number>, verdicts: verdicts as JsonObject[] },
  };
}

/** The verdict payload the gate built for `node`, as a per-node event recorded it before issue 35; null if not named. */
export function verdictOfNode(summary: ParsedGateSummary, node: string): JsonObject | null {
  const index = Object.hasOwn(summary.nodes, node) ? summary.nodes[node] : undefined;
  const verdict = index === undefined ? undefined : summary.verdicts[index];
  return verdict === undefined ? null : { ...verdict, node };
}

/** The `gate` member of a decision (or refusal) payload, if it names a summary. */
export function gateSummaryRefOf(payload: JsonObject): GateSummaryRef | null {
  const gate = payload.gate;
  if (typeof gate !== "object" || gate === null || Array.isArray(gate)) return null;
  const { summary, action, nodes, permitted } = gate as { [key: string]: JsonValue };
  if (
    !isLowerHex(summary, 32) ||
    typeof action !== "string" ||
    typeof nodes !== "number" ||
    typeof permitted !== "number"
  )
    return null;
  return { summary, action, nodes, permitted };
}
