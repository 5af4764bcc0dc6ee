/**
 * Issue 37: failover time against the node lease, with standbys. Three real `berth serve` on one store (one SQLite
 * home; one PostgreSQL 15, each server in its own home) at berth's default leader TTL, a real node with `lease_ms`
 * (default 6 s: just above the 4667 ms floor of the default failover bound) and a leased agent. Each trial stops the
 * leader cleanly (SIGTERM, the floor: the row released), kills it (SIGKILL) or freezes it (SIGSTOP, for the lease
 * plus 2 s), and prints:
 *
 * - failover: the fault → another server's pid holds `berth_leader` (read read-only), against the design bound
 *   (TTL + TTL/5) and against the lease;
 * - the lease's margin: the node's persisted deadline for the controller key (node.db `lease_deadlines`, read
 *   read-only every 100 ms) minus now; the longest renewal gap the node saw is `lease_ms − min margin` (within the
 *   1 s by which the node persists), against the lease;
 * - how many lease stops the node chained, and whether the agent's processes are the ones it started.
 *
 * Figures only. `bash scripts/bench controller/failover-lease` [--trials 2] [--lease-ms 6000]; BERTH_BENCH_ENGINES=sqlite
 * (or postgres) for one engine.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { failoverBoundMs, leaderTiming } from "../../src/core/mesh/leader-lease.js";
import { leaseFloorForOutageMs, leaseRenewEveryMs } from "../../src/core/mesh/lease.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { type HaEngine, HaWorld, type Server, stopPostgres } from "../../test/mesh-controller/support/ha-world.js";
import { cleanup, waitFor } from "../../test/mesh/harness.js";
import { liveAgents } from "../../test/support/live-agents.js";
import { killAll } from "../../test/support/process.js";
import { numberFlag } from "../support.js";

const TRIALS = numberFlag("--trials", 2);
const LEASE_MS = numberFlag("--lease-ms", 6_000);
const ENGINES = (process.env.BERTH_BENCH_ENGINES ?? "sqlite,postgres")
  .split(",")
  .filter((e): e is HaEngine => e === "sqlite" || e === "postgres");
const TIMING = leaderTiming();
const BOUND_MS = failoverBoundMs(TIMING);

/** The node's persisted lease deadline for its one controller key, or null. */
function nodeDeadline(w: HaWorld): number | null {
  try {
    const db = openDatabase(join(w.node.dataDir, "node.db"), { readonly: true });
    try {
      const row = db.prepare("SELECT value FROM node_meta WHERE key = 'lease_deadlines'").get() as
        | { value: string }
        | undefined;
      if (row === undefined) return null;
      const values = Object.values(JSON.parse(row.value) as Record<string, number>);
      return values.length === 0 ? null : Math.max(...values);
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks), or null when the pid is gone or a zombie. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" || fields[0] === "X" ? null : (fields[19] ?? null);
  } catch {
    return null;
  }
}

/**
 * The agent's lasting processes (pid and start time), older than 2 s: its watchdog's `sleep 1` and such come and go
 * by design with the same environment and are not the agent.
 */
function lasting(name: string): Array<{ pid: number; start: string }> {
  const uptimeMs = Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;
  return liveAgents(name).flatMap((a) => {
    const start = startTime(a.pid);
    return start !== null && uptimeMs - (Number(start) / 100) * 1000 > 2_000 ? [{ pid: a.pid, start }] : [];
  });
}

interface Trial {
  readonly fault: "SIGKILL" | "SIGSTOP" | "SIGTERM";
  readonly failoverMs: number;
  readonly minMarginMs: number;
  readonly leaseStops: number;
  readonly samePids: boolean;
}

async function trial(w: HaWorld, fault: Trial["fault"], name: string): Promise<Trial> {
  const leader = await waitFor(async () => (await w.leader()) ?? undefined, "a leader", 30_000);
  // The instance's oldest process (its group's leader, started by the node): the same pid and start time after the
  // trial means the node never stopped or restarted it.
  const procs = lasting(name)
    .sort((a, b) => Number(a.start) - Number(b.start))
    .slice(0, 1);
  let minMargin = Number.POSITIVE_INFINITY;
  const sampler = setInterval(() => {
    const d = nodeDeadline(w);
    if (d !== null) minMargin = Math.min(minMargin, d - Date.now());
  }, 100);
  const t0 = Date.now();
  leader.proc.child.kill(fault);
  await waitFor(
    async () => {
      const l = await w.leader();
      return l !== null && l !== leader ? l : undefined;
    },
    "a follower leads",
    60_000,
  );
  const failoverMs = Date.now() - t0;
  if (fault !== "SIGTERM")
    await waitFor(
      () => (Date.now() - t0 > LEASE_MS + 2_000 ? true : undefined),
      "the fault outlasts the lease",
      LEASE_MS + 10_000,
    );
  clearInterval(sampler);
  if (fault === "SIGSTOP") leader.proc.child.kill("SIGCONT");
  else await leader.proc.exited();
  const leaseStops = w.node.events({ kind: "workload.lifecycle" }).filter((e) => e.payload.phase === "lease").length;
  return {
    fault,
    failoverMs,
    minMarginMs: minMargin,
    leaseStops,
    samePids: procs.length > 0 && procs.every((p) => startTime(p.pid) === p.start),
  };
}

async function engineRun(engine: HaEngine): Promise<void> {
  // The agent outlives every trial: the probe's own 30 s exit (and its restart) would read as a changed process.
  const w = await HaWorld.create(engine, {
    ttlMs: null,
    nodeConfig: { lease_ms: LEASE_MS },
    sharedToken: true,
    script: "#!/bin/sh\necho placed-ok\nexec sleep 3600\n",
  });
  try {
    const servers: Server[] = [];
    for (let i = 0; i < 3; i++) servers.push(await w.serve());
    const leader = await waitFor(async () => (await w.leader()) ?? undefined, "a leader", 30_000);
    const added = await w.api(leader, "POST", "/nodes", { addr: w.nodeProxy.address, tier: "paired" });
    if (added.status !== 201) throw new Error(`adding the node: ${JSON.stringify(added.body)}`);
    const name = `bench${process.pid}${engine}`;
    const placed = await w.api(leader, "POST", "/placements", { package: w.home.pkgDir, name });
    if (placed.status !== 201) throw new Error(`placing: ${JSON.stringify(placed.body)}`);
    await waitFor(async () => (liveAgents(name).length > 0 ? true : undefined), "the agent runs", 30_000);
    // Its processes must be old enough to be told from its watchdog's passing ones (`lasting`) before a trial takes
    // them as the ones to keep: a first trial right after the start found none and read "CHANGED".
    await waitFor(async () => (lasting(name).length > 0 ? true : undefined), "the agent's processes settle", 30_000);
    const trials: Trial[] = [];
    for (const fault of ["SIGTERM", "SIGKILL", "SIGSTOP"] as const) {
      for (let i = 0; i < (fault === "SIGTERM" ? 1 : TRIALS); i++) {
        trials.push(await trial(w, fault, name));
        // Three servers again for the next trial (a stopped one woke and follows; a gone one is replaced).
        if (fault !== "SIGSTOP") await w.serve();
      }
    }
    for (const t of trials) {
      const gap = LEASE_MS - t.minMarginMs;
      console.log(
        `${engine.padEnd(8)} ${t.fault.padEnd(7)} failover ${String(t.failoverMs).padStart(5)} ms (${((100 * t.failoverMs) / BOUND_MS).toFixed(0)} % of the ${BOUND_MS} ms bound, ${((100 * t.failoverMs) / LEASE_MS).toFixed(0)} % of lease_ms)` +
          (t.fault === "SIGTERM"
            ? ""
            : `; lease margin min ${Math.round(t.minMarginMs)} ms, longest renewal gap ≈ ${Math.round(gap)} ms (${((100 * gap) / LEASE_MS).toFixed(0)} % of lease_ms); lease stops ${t.leaseStops}; agent's processes ${t.samePids ? "unchanged" : "CHANGED"}`),
      );
    }
  } finally {
    await w.close();
  }
}

console.log(
  `failover against the lease: 3 berth serve, default leader TTL ${TIMING.ttlMs} ms (bound ${BOUND_MS} ms), lease_ms ${LEASE_MS} (renewed every ${leaseRenewEveryMs(LEASE_MS, 10_000)} ms by every server; the floor with no standby is ${leaseFloorForOutageMs(BOUND_MS)} ms); load ${(loadavg()[0] ?? 0).toFixed(2)}`,
);
try {
  for (const engine of ENGINES) await engineRun(engine);
} finally {
  await stopPostgres();
  killAll();
  await cleanup();
}
