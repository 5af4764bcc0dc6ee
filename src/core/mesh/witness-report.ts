/**
 * `berth audit witnesses` (issue 38), pure: per node, the newest checkpoint of this controller's chain it holds (from
 * its describe answer) against this store's own chain. A node's checkpoint is consistent with this store when this
 * chain's first `size` events hash to the node's root; then this store's next checkpoint extends it and the node keeps
 * serving. Otherwise this store shows a history the node did not see: it will refuse every request (`witness`).
 */
import type { Hash } from "../chain/merkle.js";

export type WitnessState =
  /** The node predates witnesses (its describe carries no `witness`): it checks nothing. */
  | "not_a_witness"
  | "not_described"
  /** A witness that has no checkpoint from this key yet: the next request's checkpoint is taken as it comes. */
  | "none"
  | "consistent"
  /** The node's tree is larger than this chain: this store is behind what the node saw (restored, forked). */
  | "ahead_of_this_store"
  | "inconsistent";

export interface WitnessRow {
  readonly node_id: string | null;
  readonly addr: string;
  readonly state: WitnessState;
  readonly size: number | null;
  /** base64, as the node said */
  readonly root: string | null;
  readonly origin: string | null;
  /** This chain's root at the node's size, base64; null when this chain is shorter. */
  readonly ours: string | null;
}

export interface WitnessReport {
  readonly chain_id: string;
  /** The checkpoint this controller shows its nodes (null while its chain has none). */
  readonly checkpoint: { readonly size: number; readonly root: string; readonly note: string } | null;
  readonly nodes: readonly WitnessRow[];
}

export function witnessRow(
  t: {
    readonly node_id: string | null;
    readonly addr: string;
    readonly described: boolean;
    readonly witness: { origin: string; size: number; root: string | null } | null | undefined;
  },
  head: { readonly size: number } | null,
  oursAtSize: Hash | null,
  origin: string,
): WitnessRow {
  const base = { node_id: t.node_id, addr: t.addr, size: null, root: null, origin: null, ours: null };
  if (!t.described) return { ...base, state: "not_described" };
  if (t.witness === undefined) return { ...base, state: "not_a_witness" };
  if (t.witness === null) return { ...base, state: "none" };
  const w = t.witness;
  const ours = oursAtSize?.toString("base64") ?? null;
  const row = { ...base, size: w.size, root: w.root, origin: w.origin, ours };
  if (w.origin !== origin) return { ...row, state: "inconsistent" };
  if (ours === null)
    return { ...row, state: head !== null && w.size > head.size ? "ahead_of_this_store" : "inconsistent" };
  return { ...row, state: ours === w.root ? "consistent" : "inconsistent" };
}
