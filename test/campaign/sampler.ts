/**
 * The campaign's /proc sampler: one per world, every ~100 ms for the world's whole life (every schedule it runs, and
 * the agents earlier schedules left running). It keeps, per instance, when it was first and last seen live and when
 * it was first seen gone, and flags at once what no later state can excuse:
 * - two-live: two live instances of one name in one sample;
 * - lease-overrun: a copy on the leased node alive past the latest lease deadline the node could hold
 *   (lease-witness.ts `mustBeStoppedBy`), i.e. a lease revived or not enforced.
 * The controller's placements are read (read-only) at each sample too, so "was it ever recorded" is known.
 */
import type { LeaseWitness } from "./lease-witness.js";
import { instancesByName, type LiveProcess, liveAgentProcesses, recordedPlacements } from "./observe.js";

export interface Seen {
  readonly name: string;
  readonly node: string;
  readonly firstMs: number;
  lastMs: number;
  /** The first sample that found it gone (null while live). */
  goneMs: number | null;
}

export class Sampler {
  /** Violations found while sampling, taken by the schedule running when they were found. */
  readonly found: string[] = [];
  readonly seen = new Map<string, Seen>();
  readonly everRecorded = new Set<string>();
  samples = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly flagged = new Set<string>();

  constructor(
    private readonly prefix: string,
    private readonly home: string,
    private readonly lease: { readonly nodeId: string; readonly witness: LeaseWitness } | null,
    private readonly log: (s: string) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.sample(), 100);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private flag(key: string, v: string): void {
    if (this.flagged.has(key)) return;
    this.flagged.add(key);
    this.found.push(v);
    this.log(v);
  }

  sample(): LiveProcess[] {
    this.samples++;
    const now = Date.now();
    const live = liveAgentProcesses(this.prefix);
    const liveIds = new Set<string>();
    for (const p of live) {
      liveIds.add(p.instance);
      const s = this.seen.get(p.instance);
      if (s) {
        s.lastMs = now;
        s.goneMs = null;
      } else this.seen.set(p.instance, { name: p.name, node: p.node, firstMs: now, lastMs: now, goneMs: null });
    }
    for (const [id, s] of this.seen) if (!liveIds.has(id) && s.goneMs === null) s.goneMs = now;
    for (const [name, ids] of instancesByName(live)) {
      if (ids.size > 1)
        this.flag(
          `two-live ${name} ${[...ids].sort().join(",")}`,
          `two-live: ${ids.size} live instances of ${name} at sample ${this.samples}: ${[...ids].sort().join(", ")}`,
        );
    }
    if (this.lease) {
      const by = this.lease.witness.mustBeStoppedBy(now);
      for (const p of live) {
        if (p.node !== this.lease.nodeId || now <= by) continue;
        this.flag(
          `overrun ${p.instance}`,
          `lease-overrun: ${p.name} instance ${p.instance} on the leased node runs ${now - by} ms past the latest its lease allows (every delivered request counted; lease_ms ${this.lease.witness.leaseMs})`,
        );
      }
    }
    for (const id of recordedPlacements(this.home)?.keys() ?? []) this.everRecorded.add(id);
    return live;
  }
}
