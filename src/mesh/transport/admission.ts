/**
 * Which connections a listener keeps (spec/mesh.md §4.3, issue 12): a peer that has not authenticated must never be
 * able to hold a slot an authorised controller needs. The rules, each for one attack:
 *
 * - an *authenticated* connection (its first request verified by the service) is never evicted to make room for an
 *   unauthenticated one; only the overall cap bounds them;
 * - unauthenticated connections are bounded per address and overall; a newcomer over either bound evicts the
 *   oldest unauthenticated connection of the address holding the most (its own address first), so an attacker
 *   with one address only ever evicts its own sockets while it holds more than anyone else;
 * - a connection younger than `graceMs` is not evicted: a controller that shares the attacker's address (loopback,
 *   a NAT'd LAN) gets the time to deliver its first frame even while the attacker churns (without it, a burst of
 *   accepts between the controller's accept and its first read would evict it). While every candidate is that young
 *   the soft bounds may be exceeded, up to the overall cap; only at the overall cap is the newcomer refused.
 *
 * Pure bookkeeping: the caller passes the clock reading and carries out the evictions.
 */

export interface AdmissionLimits {
  /** All connections, authenticated or not. */
  readonly maxConnections: number;
  readonly maxUnauthenticated: number;
  readonly maxUnauthenticatedPerAddress: number;
  /** A fresh connection is not evicted during its first `graceMs`. */
  readonly graceMs: number;
}

export type AdmissionVerdict<C> =
  | { readonly kind: "admit"; readonly evict: readonly C[] }
  | { readonly kind: "refuse"; readonly reason: string };

interface Entry<C> {
  readonly conn: C;
  readonly address: string;
  readonly admittedMs: number;
  authenticated: boolean;
}

/** `::ffff:127.0.0.1` and `127.0.0.1` are the same peer address. */
export function peerAddress(remoteAddress: string | undefined): string {
  const raw = remoteAddress ?? "?";
  return raw.startsWith("::ffff:") ? raw.slice(7) : raw;
}

export class Admission<C> {
  /** In admission order: the first entries are the oldest. */
  private readonly entries = new Map<C, Entry<C>>();
  private unauthenticated = 0;
  private readonly unauthenticatedBy = new Map<string, number>();

  constructor(private readonly limits: AdmissionLimits) {}

  get size(): number {
    return this.entries.size;
  }

  get unauthenticatedCount(): number {
    return this.unauthenticated;
  }

  /** Decides on a new connection; on `admit`, the connections in `evict` have been released and must be closed. */
  admit(conn: C, address: string, nowMs: number): AdmissionVerdict<C> {
    const evict: C[] = [];
    const evictOne = (from: string | null): boolean => {
      const victim = this.oldestEvictable(from, nowMs);
      if (victim === undefined) return false;
      this.release(victim);
      evict.push(victim);
      return true;
    };
    if ((this.unauthenticatedBy.get(address) ?? 0) >= this.limits.maxUnauthenticatedPerAddress) evictOne(address);
    if (this.unauthenticated >= this.limits.maxUnauthenticated) evictOne(this.busiestAddress(nowMs));
    if (this.entries.size >= this.limits.maxConnections && !evictOne(this.busiestAddress(nowMs))) {
      return { kind: "refuse", reason: `${this.entries.size} connections open, none of them evictable` };
    }
    this.entries.set(conn, { conn, address, admittedMs: nowMs, authenticated: false });
    this.unauthenticated++;
    this.unauthenticatedBy.set(address, (this.unauthenticatedBy.get(address) ?? 0) + 1);
    return { kind: "admit", evict };
  }

  /** The service verified this connection's first request: it keeps its slot until it closes. */
  authenticate(conn: C): void {
    const entry = this.entries.get(conn);
    if (!entry || entry.authenticated) return;
    entry.authenticated = true;
    this.forgetUnauthenticated(entry.address);
  }

  isAuthenticated(conn: C): boolean {
    return this.entries.get(conn)?.authenticated ?? false;
  }

  /** The connection closed (or was evicted). Idempotent. */
  release(conn: C): void {
    const entry = this.entries.get(conn);
    if (!entry) return;
    this.entries.delete(conn);
    if (!entry.authenticated) this.forgetUnauthenticated(entry.address);
  }

  private forgetUnauthenticated(address: string): void {
    this.unauthenticated--;
    const left = (this.unauthenticatedBy.get(address) ?? 1) - 1;
    if (left > 0) this.unauthenticatedBy.set(address, left);
    else this.unauthenticatedBy.delete(address);
  }

  /** The address holding the most evictable connections; `null` when there are none. */
  private busiestAddress(nowMs: number): string | null {
    const counts = new Map<string, number>();
    let best: string | null = null;
    let bestCount = 0;
    for (const e of this.entries.values()) {
      if (!this.evictable(e, nowMs)) continue;
      const n = (counts.get(e.address) ?? 0) + 1;
      counts.set(e.address, n);
      if (n > bestCount) {
        best = e.address;
        bestCount = n;
      }
    }
    return best;
  }

  private oldestEvictable(address: string | null, nowMs: number): C | undefined {
    if (address === null) return undefined;
    for (const e of this.entries.values()) {
      if (e.address === address && this.evictable(e, nowMs)) return e.conn;
    }
    return undefined;
  }

  private evictable(e: Entry<C>, nowMs: number): boolean {
    return !e.authenticated && nowMs - e.admittedMs >= this.limits.graceMs;
  }
}
