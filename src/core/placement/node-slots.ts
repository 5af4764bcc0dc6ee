/**
 * What the engine keeps about the node list between decisions (issue 35): a controller hands it the same targets in
 * the same order decision after decision (fresh view objects, but the same node id strings and the same facts
 * objects until a node is described again). Kept per position of the list:
 *
 * - the node id, and the node's rank among all ids in ascending order: ranking (select.ts) then compares integers,
 *   never id strings, and the rejected nodes come out in id order by walking the ranks, with no sort at all;
 * - the facts object and its memo (facts-memo.ts): the same facts at the same position skip the WeakMap;
 * - that the list's ids are distinct and each facts object names the node it is filed under (`crossCheck`).
 *
 * A list that differs in any id (added, removed, reordered, renamed) is checked and ranked afresh, by sorting; a
 * position whose facts object changed gets its memo from the WeakMap and its filing checked again. Nothing here
 * changes a decision: it is the same checks and the same order, remembered. Module state, like the memos: the engine
 * is synchronous, so one decision runs at a time.
 */
import { type FactsMemo, memoOf } from "./facts-memo.js";
import type { NodeFacts, NodeView } from "./inputs.js";
import type { PlacementError } from "./outputs.js";

/** The node list as the engine reads it: per position, the facts memo and the id's rank. */
export interface NodeSlots {
  /** Per position: the facts' memo, or `null` without facts. */
  readonly memos: readonly (FactsMemo | null)[];
  /** Per position: the rank of its node id among all ids, ascending (0 is the smallest). */
  readonly rank: Int32Array;
  /** Per rank: the position of that node in the list. */
  readonly byRank: Int32Array;
  /** Per node id, its position. */
  readonly positions: ReadonlyMap<string, number>;
}

let ids: string[] = [];
let facts: (NodeFacts | null)[] = [];
let memos: (FactsMemo | null)[] = [];
let rank = new Int32Array(0);
let byRank = new Int32Array(0);
let positions = new Map<string, number>();

/** Checks the types cannot express: one view per node, and facts about the node they are filed under. */
function crossCheck(nodes: readonly NodeView[]): PlacementError | null {
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  const misfiled: string[] = [];
  for (const n of nodes) {
    if (seen.has(n.node_id)) duplicates.add(n.node_id);
    seen.add(n.node_id);
    if (n.facts !== null && n.facts.node_id !== n.node_id) misfiled.push(n.node_id);
  }
  if (duplicates.size > 0) {
    const shown = [...duplicates].sort().join(", ");
    return {
      code: "duplicate_node",
      message: `node ${shown} appears more than once in the placement input; each target must be listed once`,
      constraints: [],
    };
  }
  if (misfiled.length > 0) {
    return {
      code: "invalid_request",
      message: `the facts listed under node ${misfiled.sort()[0]} name another node; facts must come from the target they describe`,
      constraints: [],
    };
  }
  return null;
}

/** Forgets the list (after a list that failed its checks: nothing of it may count as checked). */
function forget(): void {
  ids = [];
  positions = new Map();
  facts = [];
  memos = [];
}

/** The whole list checked, ranked and remembered afresh. */
function remember(nodes: readonly NodeView[]): PlacementError | null {
  const problem = crossCheck(nodes);
  if (problem !== null) {
    forget();
    return problem;
  }
  const n = nodes.length;
  ids = nodes.map((v) => v.node_id);
  facts = nodes.map((v) => v.facts);
  memos = facts.map((f) => (f === null ? null : memoOf(f)));
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => {
    const x = ids[a] as string;
    const y = ids[b] as string;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  rank = new Int32Array(n);
  byRank = new Int32Array(n);
  positions = new Map(ids.map((id, i) => [id, i]));
  for (let r = 0; r < n; r++) {
    const position = order[r] as number;
    byRank[r] = position;
    rank[position] = r;
  }
  return null;
}

/** The slots of this node list, or the error `decide` answers for a list that fails its checks. */
export function slotsOf(nodes: readonly NodeView[]): NodeSlots | PlacementError {
  const n = nodes.length;
  let same = ids.length === n;
  for (let i = 0; same && i < n; i++) if ((nodes[i] as NodeView).node_id !== ids[i]) same = false;
  if (!same) {
    const problem = remember(nodes);
    if (problem !== null) return problem;
    return { memos, rank, byRank, positions };
  }
  for (let i = 0; i < n; i++) {
    const node = nodes[i] as NodeView;
    const f = node.facts;
    if (f === facts[i]) continue;
    if (f !== null && f.node_id !== node.node_id) {
      forget();
      return crossCheck(nodes) as PlacementError;
    }
    facts[i] = f;
    memos[i] = f === null ? null : memoOf(f);
  }
  return { memos, rank, byRank, positions };
}

export function isSlots(x: NodeSlots | PlacementError): x is NodeSlots {
  return "rank" in x;
}

/** The position of the node with this id in the list, or -1. */
export function positionOf(slots: NodeSlots, id: string): number {
  return slots.positions.get(id) ?? -1;
}

/** Sets `bit` in `marks` at the position of every listed id that names a node of the list. */
export function markIds(slots: NodeSlots, listed: readonly string[], bit: number, marks: Uint8Array): void {
  for (const id of listed) {
    const position = positionOf(slots, id);
    if (position >= 0) marks[position] = (marks[position] as number) | bit;
  }
}
