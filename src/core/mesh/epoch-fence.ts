/**
 * Which controller store a node serves, and under which leader epoch (issue 20): the node's side of the fence.
 *
 * A controller key may sit in more than one `BERTH_HOME` (a copied home, a second operator machine), and a paused
 * leader may wake after another took over. Both would act on the node with a valid signature. So every request
 * from a controller names its store (`store_id`) and the leader epoch it acts under, and the node keeps, per
 * controller key, a *binding*: the store it first served and the highest epoch it has seen from that store.
 *
 * Structural rules (one row each in epoch-fence.test.ts):
 * - the first request that names a store binds the key to it; nothing else ever moves a binding to another store
 *   but an explicit `rehome` (the operator's `berth node rehome`), so two homes of one key cannot both place;
 * - a mutating request from another store is refused `foreign_store`; one with a lower epoch than the highest seen
 *   is refused `stale_epoch`, so a deposed leader can never act after its successor has reached this node;
 * - a read is never refused (it changes nothing on the node), but it may bind an unbound node and raise the epoch:
 *   a new leader's first describe already fences the old one;
 * - an epoch only grows here: a higher one is recorded before the request is served; `rehome` from the bound store
 *   cannot lower it either.
 *
 * Pure: the shell (src/mesh/node/controller-binding.ts) persists the change and chains it with the request.
 */
import type { Authority } from "../protocol/messages.js";

export interface ControllerBinding {
  readonly store_id: string;
  readonly epoch: number;
}

export type BindingChange =
  | { readonly kind: "bind"; readonly store_id: string; readonly epoch: number }
  | { readonly kind: "raise"; readonly store_id: string; readonly from: number; readonly to: number };

export type FenceVerdict =
  | { readonly kind: "serve"; readonly change: BindingChange | null }
  | { readonly kind: "refuse"; readonly code: "foreign_store" | "stale_epoch"; readonly reason: string };

/**
 * The verdict on one verified request. `authority` is null only on a read method (check 11a of spec/mesh.md §4.6
 * refuses a mutating request without one before this is asked).
 */
export function judgeAuthority(
  binding: ControllerBinding | null,
  authority: Authority | null,
  mutating: boolean,
): FenceVerdict {
  if (authority === null) return { kind: "serve", change: null };
  if (binding === null)
    return { kind: "serve", change: { kind: "bind", store_id: authority.store_id, epoch: authority.epoch } };
  if (binding.store_id !== authority.store_id) {
    if (!mutating) return { kind: "serve", change: null };
    return {
      kind: "refuse",
      code: "foreign_store",
      reason: `this node serves the controller key for store ${binding.store_id}, not store ${authority.store_id}; if that store should manage this node, run \`berth node rehome\` from it (the other store then loses it)`,
    };
  }
  if (authority.epoch < binding.epoch) {
    if (!mutating) return { kind: "serve", change: null };
    return {
      kind: "refuse",
      code: "stale_epoch",
      reason: `leader epoch ${authority.epoch} is below epoch ${binding.epoch}, which this node has already seen from store ${binding.store_id}: a newer leader has acted, this one must step down`,
    };
  }
  if (authority.epoch > binding.epoch) {
    return {
      kind: "serve",
      change: { kind: "raise", store_id: binding.store_id, from: binding.epoch, to: authority.epoch },
    };
  }
  return { kind: "serve", change: null };
}

/** What `rehome` records: the binding it replaces (null when the key was unbound) and the one it makes. */
export type RehomeVerdict =
  | { readonly kind: "rehome"; readonly from: ControllerBinding | null; readonly to: ControllerBinding }
  | Extract<FenceVerdict, { kind: "refuse" }>;

/**
 * `rehome` is the operator's explicit act: from another store it is always carried out, and the binding moves to
 * the requesting store at the request's epoch (epochs of different stores are unrelated, so the old high-water mark
 * does not carry over). From the bound store itself it moves nothing back: a lower epoch is `stale_epoch` like any
 * mutating request, so a deposed leader cannot lower the mark by re-homing to its own store.
 */
export function judgeRehome(binding: ControllerBinding | null, authority: Authority): RehomeVerdict {
  const to = { store_id: authority.store_id, epoch: authority.epoch };
  if (binding === null || binding.store_id !== authority.store_id) return { kind: "rehome", from: binding, to };
  const same = judgeAuthority(binding, authority, true);
  if (same.kind === "refuse") return same;
  return {
    kind: "rehome",
    from: binding,
    to: { store_id: binding.store_id, epoch: Math.max(binding.epoch, authority.epoch) },
  };
}
