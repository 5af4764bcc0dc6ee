/**
 * The bounded replay guard of spec/mesh.md §4.6 checks 13–15. It holds at most `capacity` unexpired nonces; when full it
 * evicts expired ones and, if still full, refuses (`busy`): it fails closed rather than forgetting a live nonce.
 * Deterministic: the caller passes the clock reading. The guard itself lives in memory: replay across a daemon
 * restart is prevented by the boot id (check 8) for every request that names one, and for `describe`, which names no
 * boot, by the node persisting describe nonces and seeding the guard with them at start (src/mesh/node/describe.ts).
 */
export type NonceAdmission = "room" | "busy" | "replay";

export class NonceGuard {
  private readonly entries = new Map<string, number>();

  constructor(readonly capacity: number = 8192) {}

  get size(): number {
    return this.entries.size;
  }

  /** Checks 13 and 14, without recording anything. */
  admit(nonce: string, nowMs: number): NonceAdmission {
    if (this.entries.size >= this.capacity) this.evictExpired(nowMs);
    if (this.entries.size >= this.capacity && !this.entries.has(nonce)) return "busy";
    const expires = this.entries.get(nonce);
    if (expires !== undefined && expires > nowMs) return "replay";
    if (expires !== undefined) {
      // An expired entry still names a request that check 9 would refuse as expired; keep refusing it as a replay.
      return "replay";
    }
    return "room";
  }

  /** Check 15: only after every other check passed. */
  record(nonce: string, expiresAtMs: number): void {
    this.entries.set(nonce, expiresAtMs);
  }

  private evictExpired(nowMs: number): void {
    for (const [nonce, expires] of this.entries) if (expires <= nowMs) this.entries.delete(nonce);
  }
}
