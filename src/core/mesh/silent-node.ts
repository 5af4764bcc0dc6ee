/**
 * Issue 37 (F5): what the controller does with a leased node that takes requests and answers none (a paused node
 * behind a TLS-terminating middlebox, a one-way partition, a daemon stopped with SIGSTOP while its kernel still
 * accepts connections). Pure; the shell (src/mesh/controller/watch-stamps.ts, targets.ts) reads the clock and the
 * store and acts on the verdicts.
 *
 * The problem: every request that reaches such a node may renew its lease (docs/concepts.md "The node lease", rule
 * 1), and the controller never hears whether it did, so by rule 4 it counts each one; a controller that keeps asking
 * moves the lease's end (rule 5) forward with every contact and can never conclude that the node's copies have
 * stopped. Its agents were held for ever.
 *
 * The rules here:
 * - **Hold.** Once a leased node has been unreachable (no valid answer since its first failed contact) for half its
 *   lease, no process of the controller sends it a request that could renew the lease (`judgeSend`): the stamp of
 *   rule 4 is refused instead of written, so the request never leaves. Half a lease, because the lease keeper renews
 *   every quarter of it: a node whose answers are merely slow or lost for a moment (a pause, a dropped answer) still
 *   receives at least one more renewal after it was first suspected, and loses nothing; a node that answers nothing
 *   for that long is handled like an unreachable one. Its lease then runs out on the node, and rule 5's wait (from
 *   the last stamp, which is now fixed) ends: its agents are moved exactly as an unreachable node's, by the same keep
 *   loop judgement (`leaseCertainlyOver`, core/mesh/keep.ts). A node without a lease is never held: there is no
 *   lease to let run out, and its agents are held until the operator forgets it anyway.
 * - **Probe.** While held, the node is asked only with a probe: a describe whose validity window ended before any
 *   node clock within the skew bound reads it (`probeTimes`). The node refuses it `expired` at verification (§4.6
 *   step 9), before rule 1, so it renews nothing and runs nothing, yet the refusal is signed and bound to the probe's
 *   nonce: an answered probe proves the node answers again, which ends the hold.
 *
 * Why the hold is safe: it only withholds requests. Every request that leaves is still stamped first (rule 4), so
 * the judgement of rule 5 is unchanged; the hold only stops the stamp from moving.
 */
import { CLOCK_SKEW_BOUND_MS } from "./lease.js";

/** How long a leased node may go unanswered before requests that could renew its lease are held: half the lease. */
export function holdRenewalsAfterMs(leaseMs: number): number {
  return Math.floor(leaseMs / 2);
}

/** What the store knows of a node when a request to it is about to be stamped. */
export interface SilenceRecord {
  /** The lease its accepted facts advertise; null: it runs without one. */
  readonly lease_ms: number | null;
  /** Since when no contact has had a valid answer (the first failed contact after the last valid answer); null: reachable. */
  readonly unreachable_since_ms: number | null;
}

export type SendVerdict =
  | { readonly kind: "send" }
  | { readonly kind: "hold"; readonly held_since_ms: number; readonly why: string };

/** Whether a request to the node may leave now (`nowMs`: the controller's clock, the request's issue stamp). */
export function judgeSend(r: SilenceRecord, nowMs: number): SendVerdict {
  if (r.lease_ms === null || r.unreachable_since_ms === null) return { kind: "send" };
  const heldSince = r.unreachable_since_ms + holdRenewalsAfterMs(r.lease_ms);
  if (nowMs < heldSince) return { kind: "send" };
  return {
    kind: "hold",
    held_since_ms: heldSince,
    why: `the node has answered nothing for ${nowMs - r.unreachable_since_ms} ms, more than half its lease (lease_ms ${r.lease_ms}): requests that could renew its lease are held until it answers a probe, so the lease can run out and its agents be moved`,
  };
}

/** A probe's validity window: one second, ending a second before the skew bound. */
export const PROBE_VALIDITY_MS = 1_000;
export const PROBE_MARGIN_MS = 1_000;

/**
 * The issue stamp and validity of a probe signed at `nowMs`: it expires at `nowMs − skew − margin`, so a node whose
 * clock reads at most `skew` behind the controller's (assumption A1) finds it expired on arrival.
 */
export function probeTimes(
  nowMs: number,
  skewMs: number = CLOCK_SKEW_BOUND_MS,
): { readonly issued_at_ms: number; readonly validity_ms: number } {
  const expiresAt = nowMs - skewMs - PROBE_MARGIN_MS;
  return { issued_at_ms: expiresAt - PROBE_VALIDITY_MS, validity_ms: PROBE_VALIDITY_MS };
}
