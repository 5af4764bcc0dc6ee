/**
 * Room kept aside on the node's own disk (issue 37 finding B: a node whose data directory filled up exited on
 * SQLITE_FULL, and its agents ended with nothing recording why).
 *
 *   daemon start ──▶ reserve file (RESERVE_BYTES of written zeros) in the data directory
 *   a write fails SQLITE_FULL / ENOSPC ──▶ the reserve is deleted, the write tried once more ──▶ the node is `full`:
 *       it keeps recording what happens to what it runs (exits, lease stops, refusals, lease renewals), and it refuses
 *       new work (`place`, `load`) with `disk_full`
 *   every few seconds ──▶ room for the reserve twice over again? the reserve is written back and the node takes work
 *
 * The reserve is what lets the records that matter land when something else filled the disk; a disk that fills the
 * freed room too fails those writes as well, and then each caller keeps its own record to try again (processes.ts,
 * lease.ts) rather than ending the daemon.
 */
import { existsSync, statfsSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export const RESERVE_FILE = "disk-reserve";
export const RESERVE_BYTES = 2 * 1024 * 1024;

/** SQLite's "database or disk is full", or the kernel's ENOSPC from a file write. */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_FULL" || code === "ENOSPC";
}

export class DiskReserve {
  private given = false;

  constructor(
    readonly path: string,
    readonly bytes: number = RESERVE_BYTES,
  ) {}

  /** True from the reserve's release until it is written back: the node refuses new work meanwhile. */
  get full(): boolean {
    return this.given;
  }

  /**
   * Whether new work is refused: the reserve was given up, or the disk has less room than the reserve (filled before
   * any write of the node's failed). Never throws.
   */
  get refusesNewWork(): boolean {
    if (this.given) return true;
    try {
      const s = statfsSync(dirname(this.path));
      return Number(s.bavail) * Number(s.bsize) < this.bytes;
    } catch {
      return false;
    }
  }

  /** Gives the reserve up so a write that found the disk full can land; false when there was none to give. */
  release(): boolean {
    this.given = true;
    if (!existsSync(this.path)) return false;
    try {
      unlinkSync(this.path);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Writes the reserve back when the disk has room for it twice over (so taking it does not fill the disk again), and
   * the node takes new work again. Returns whether the reserve is in place. Never throws.
   */
  restore(): boolean {
    try {
      if (existsSync(this.path) && statSync(this.path).size === this.bytes) {
        this.given = false;
        return true;
      }
      const s = statfsSync(dirname(this.path));
      if (Number(s.bavail) * Number(s.bsize) < 2 * this.bytes) return false;
      writeFileSync(this.path, Buffer.alloc(this.bytes), { mode: 0o600 });
      this.given = false;
      return true;
    } catch {
      try {
        unlinkSync(this.path);
      } catch {
        // nothing was written
      }
      return false;
    }
  }
}
