/**
 * Striking one fault of a round (schedule.ts `Fault`) on the world's proxies, daemons and processes. Each resolves
 * when its fault is over (healed, released, restarted) and counts itself in `faults` by type, or as
 * `<type>:unstruck` when what it waited for never came (an armed fault whose request was never sent).
 */
import type { Spawned } from "../support/process.js";
import type { HeldRequest } from "../support/tcp-proxy.js";
import { liveAgentProcesses } from "./observe.js";
import type { Fault } from "./schedule.js";
import type { World } from "./world.js";

export interface FaultContext {
  readonly w: World;
  /** Whether a name is the running schedule's: kill-agent/kill-leader pick among its instances only. */
  readonly mine: (name: string) => boolean;
  readonly faults: Record<string, number>;
  /** Instances the campaign itself killed. */
  readonly killed: Set<string>;
  /** Nodes killed for good in this schedule (dead-node), restarted only after the judge. */
  readonly dead: Set<number>;
  /** Each daemon's down windows [killed, restarted), for the lease judge (a copy stopped by its watchdog). */
  readonly down: Map<number, Array<[number, number | null]>>;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

export async function killDaemon(ctx: FaultContext, i: number): Promise<boolean> {
  const n = ctx.w.nodes[i];
  if (!n?.alive) return false;
  await n.kill9();
  const windows = ctx.down.get(i) ?? [];
  windows.push([Date.now(), null]);
  ctx.down.set(i, windows);
  return true;
}

/**
 * Restarts a killed daemon with its data dir on its old port; if another world took that port meanwhile (worlds run
 * side by side), on a fresh one, the proxy retargeted: the controller still reaches it at the proxy's address.
 */
export async function restartDaemon(ctx: FaultContext, i: number): Promise<void> {
  const n = ctx.w.nodes[i];
  if (!n || n.alive) return;
  try {
    await n.start();
  } catch {
    await n.start("127.0.0.1:0");
    ctx.w.proxies[i]?.retarget(n.address);
  }
  const open = ctx.down.get(i)?.find((w) => w[1] === null);
  if (open) open[1] = Date.now();
}

export async function strike(ctx: FaultContext, f: Fault, clis: Spawned[], opsDone: Promise<void>): Promise<void> {
  const { w } = ctx;
  const after = (ms: number) => Promise.race([sleep(ms), opsDone.then(() => sleep(Math.min(ms, 200)))]);
  switch (f.fault) {
    case "drop-answer": {
      const p = w.proxies[f.node];
      if (!p) return;
      const before = p.dropped;
      p.dropNextPlaceAnswer();
      await opsDone;
      bump(ctx.faults, p.dropped > before ? f.fault : `${f.fault}:unstruck`);
      return;
    }
    case "hold-request": {
      const held: HeldRequest | undefined = w.proxies[f.node]?.holdNextRequest(f.method);
      if (!held) return;
      const came = await Promise.race([held.arrived.then(() => true), opsDone.then(() => false)]);
      if (!came) {
        bump(ctx.faults, `${f.fault}:unstruck`);
        return;
      }
      bump(ctx.faults, `${f.fault}:${f.ending}`);
      await sleep(f.forMs);
      if (f.ending === "release") held.release();
      else held.reset();
      return;
    }
    case "delay-answer": {
      const p = w.proxies[f.node];
      if (!p) return;
      const before = p.delayed;
      p.delayNextAnswer(f.method);
      for (;;) {
        if (p.delayed > before) break;
        const done = await Promise.race([sleep(20).then(() => false), opsDone.then(() => true)]);
        if (done && p.delayed === before) {
          bump(ctx.faults, `${f.fault}:unstruck`);
          return;
        }
      }
      bump(ctx.faults, f.fault);
      await sleep(f.forMs);
      p.releaseDelayed();
      return;
    }
    case "partition": {
      await sleep(f.atMs);
      await w.proxies[f.node]?.cut();
      bump(ctx.faults, f.fault);
      await after(f.forMs);
      await w.proxies[f.node]?.heal();
      return;
    }
    case "reset":
      await sleep(f.atMs);
      w.proxies[f.node]?.resetConnections();
      bump(ctx.faults, f.fault);
      return;
    case "kill-daemon": {
      await sleep(f.atMs);
      if (ctx.dead.has(f.node) || !(await killDaemon(ctx, f.node))) {
        bump(ctx.faults, `${f.fault}:unstruck`);
        return;
      }
      bump(ctx.faults, f.fault);
      await after(f.forMs);
      await restartDaemon(ctx, f.node);
      return;
    }
    case "dead-node": {
      await sleep(f.atMs);
      // Never all of them: a world with no node left judges nothing.
      const alive = w.nodes.filter((n) => n.alive).length;
      if (ctx.dead.has(f.node) || alive <= 1 || !(await killDaemon(ctx, f.node))) {
        bump(ctx.faults, `${f.fault}:unstruck`);
        return;
      }
      ctx.dead.add(f.node);
      bump(ctx.faults, `${f.fault}:${f.node === w.leaseNode ? "lease" : "no-lease"}`);
      return;
    }
    case "hold-lease": {
      const i = w.leaseNode;
      const p = i === null ? undefined : w.proxies[i];
      if (!p) {
        bump(ctx.faults, `${f.fault}:unstruck`);
        return;
      }
      // The hold is armed from the round's start and timed from the first request it keeps (a loaded machine may
      // start the round's CLIs seconds late): that renewal, and all after it, reach the node past the lease.
      const hold = p.holdAllRequests();
      let done = false;
      void opsDone.then(() => {
        done = true;
      });
      while (hold.held() === 0 && !done) await sleep(20);
      if (hold.held() === 0) {
        hold.release();
        bump(ctx.faults, `${f.fault}:unstruck`);
        return;
      }
      await sleep(w.leaseMs + f.overMs);
      hold.release();
      bump(ctx.faults, f.fault);
      return;
    }
    case "kill-cli": {
      await sleep(f.atMs);
      const c = clis[f.which % Math.max(clis.length, 1)];
      if (!c || c.child.exitCode !== null || c.child.signalCode !== null) {
        bump(ctx.faults, `${f.fault}:unstruck`);
        return;
      }
      c.child.kill("SIGKILL");
      bump(ctx.faults, f.fault);
      return;
    }
    case "kill-agent":
    case "kill-leader": {
      await sleep(f.atMs);
      const live = liveAgentProcesses(w.prefix).filter((p) => ctx.mine(p.name));
      const instances = [...new Set(live.map((p) => p.instance))].sort();
      const target = instances[f.which % Math.max(instances.length, 1)];
      const victims = live.filter(
        (p) => p.instance === target && (f.fault === "kill-leader" ? p.pid === p.pgid : p.pid !== p.pgid),
      );
      if (target === undefined || victims.length === 0) {
        bump(ctx.faults, `${f.fault}:unstruck`);
        return;
      }
      for (const v of victims) {
        try {
          process.kill(v.pid, "SIGKILL");
        } catch {
          // gone already
        }
      }
      ctx.killed.add(target);
      bump(ctx.faults, f.fault);
      return;
    }
  }
}
