/**
 * The campaign's outside witness of a node lease (issue 16, docs/concepts.md "The node lease"): it sits on the
 * leased node's proxy (`TcpProxy.observer`) and sees every request as it is written to the node — its nonce, its
 * `issued_at_ms`, when it was delivered — and every answer as the node sent it. From those alone it bounds the
 * node's lease deadline for the world's one controller key, both ways:
 *
 * - `lowerDeadline(by)`: the node renews to `min(issued_at, node_now) + lease_ms` for every request it accepted, and
 *   its `node_now` at arrival is no earlier than the delivery the proxy saw; a request answered `ok` was accepted, and
 *   accepted no later than its answer left the node. So once the proxy has seen an `ok` answer by time `by`, the
 *   node's deadline from then on is at least `min(issued_at, delivered) + lease_ms`. A request merely delivered (still
 *   in the node's socket buffer on a starved machine) proves nothing yet. A lease stop that *began* after `by` and
 *   ended before that deadline (less `EARLY_TOLERANCE_MS`: a restarted daemon may stop up to a second early,
 *   lease.ts) is a stop nobody asked for; the judge (run.ts) picks `by` no later than the stop can have begun.
 * - `upperDeadline`: a request delivered at or after `issued_at + lease_ms` is late and renews nothing; any other may
 *   have renewed to at most `issued_at + lease_ms`. So the deadline is at most the max of those over every delivered,
 *   non-late request (and the first daemon's boot plus the lease, the deadline of a controller it never heard). A
 *   copy on the node alive past it plus the stop grace, the stop margin and `OVERRUN_SLACK_MS` outlived its lease.
 * - `lateAccepted`: a request delivered late and answered `ok` revived the lease: the promise "a request held in the
 *   network past the lease must not revive it" broken, seen directly.
 * Same machine, one clock: the proxy's `Date.now()` is the node's and the controller's.
 */
import { LEASE_STOP_GRACE_MS, LEASE_STOP_MARGIN_MS } from "../../src/core/mesh/lease.js";
import type { ProxyObserver } from "../support/tcp-proxy.js";

/** A restarted daemon's persisted deadline may be up to a second behind (lease.ts PERSIST_STEP_MS), plus a check. */
export const EARLY_TOLERANCE_MS = 1_300;
/** Room for a loaded machine's scheduling past the grace and margin the controller's own wait allows. */
export const OVERRUN_SLACK_MS = 2_000;
/** A request delivered this far past its lease is certainly late on the node's clock (it reads its clock later). */
const LATE_EDGE_MS = 20;

interface Delivered {
  readonly nonce: string;
  readonly method: string;
  readonly issuedAtMs: number;
  readonly deliveredMs: number;
}

export class LeaseWitness implements ProxyObserver {
  private readonly delivered: Delivered[] = [];
  private readonly answers = new Map<string, { status: string; code: string | null; atMs: number }>();
  /** Requests delivered late and answered ok: each a broken promise. */
  readonly revived: string[] = [];
  lateDelivered = 0;

  constructor(
    readonly leaseMs: number,
    /** When the leased daemon booted (set once the world is up): a lease it never granted counts from there. */
    public bootMs: number,
  ) {}

  request(r: Delivered): void {
    this.delivered.push(r);
    if (r.deliveredMs >= r.issuedAtMs + this.leaseMs + LATE_EDGE_MS) this.lateDelivered++;
  }

  answer(a: {
    readonly nonce: string;
    readonly method: string;
    readonly status: string;
    readonly code: string | null;
    readonly atMs: number;
  }): void {
    this.answers.set(a.nonce, { status: a.status, code: a.code, atMs: a.atMs });
    const r = this.delivered.find((d) => d.nonce === a.nonce);
    if (r && a.status === "ok" && r.deliveredMs >= r.issuedAtMs + this.leaseMs + LATE_EDGE_MS) {
      this.revived.push(
        `${r.method} issued at ${r.issuedAtMs} and delivered ${r.deliveredMs - r.issuedAtMs} ms later (lease_ms ${this.leaseMs}) was answered ok`,
      );
    }
  }

  /** The node's deadline is at least this from `answeredBy` on, counting requests answered ok by then. */
  lowerDeadline(answeredBy: number): number {
    let best = Number.NEGATIVE_INFINITY;
    for (const r of this.delivered) {
      const a = this.answers.get(r.nonce);
      if (a?.status !== "ok" || a.atMs > answeredBy) continue;
      best = Math.max(best, Math.min(r.issuedAtMs, r.deliveredMs) + this.leaseMs);
    }
    return best;
  }

  /** The node's deadline is at most this, counting requests delivered by `atMs`. */
  upperDeadline(atMs: number): number {
    let best = this.bootMs + this.leaseMs;
    for (const r of this.delivered) {
      if (r.deliveredMs > atMs || r.deliveredMs >= r.issuedAtMs + this.leaseMs) continue;
      best = Math.max(best, r.issuedAtMs + this.leaseMs);
    }
    return best;
  }

  /** Past this, no copy on the node may still run (see the header). */
  mustBeStoppedBy(atMs: number): number {
    return this.upperDeadline(atMs) + LEASE_STOP_GRACE_MS + LEASE_STOP_MARGIN_MS + OVERRUN_SLACK_MS;
  }
}
