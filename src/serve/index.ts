/**
 * The loops `berth serve` keeps running (issue 16), one folder per target behind one small contract: each starts
 * ticking (a pass at once, then every `tickMs`, one at a time, on the store's leader only), can run one pass on
 * demand with its report as a value, and stops after the pass in flight so what it uses can be closed after.
 *
 *   server/server.ts ─ startServeLoops ─┬─▶ mesh/        describe every target, then one keep pass (watch.ts)
 *                                       ├─▶ kubernetes/  keep every Kubernetes agent running once (keeper.ts)
 *                                       ├─▶ mesh/        on every server, leader or not: renew the node leases at a
 *                                       │                cadence from the shortest one (lease-keeper.ts, issue 37)
 *                                       └─▶ mesh/        on every server: log each node's change to suspect or dead
 *                                                        and back, read from the store (liveness-alerts.ts, issue 37)
 *
 * This file only wires; what each loop decides is in its folder and, below it, in `src/core`.
 */
import type { AgentsEnv } from "../agents/env.js";
import type { MeshController } from "../mesh/controller/controller.js";
import type { Judged, KubernetesKeeper } from "./kubernetes/keeper.js";
import { keeperPorts, startKubernetesKeeper } from "./kubernetes/keeper-ports.js";
import { type LeaseKeeper, startLeaseKeeper } from "./mesh/lease-keeper.js";
import { livenessMessage, startLivenessAlerts } from "./mesh/liveness-alerts.js";
import { shortLeaseWarner } from "./mesh/short-lease-warning.js";
import type { PassReport } from "./mesh/keep-loop.js";
import { DEFAULT_TICK_MS, startTargetWatch } from "./mesh/watch.js";

export { DEFAULT_TICK_MS };

/** One keep-running loop of `berth serve`. */
export interface ServeLoop<Report> {
  readonly target: "mesh" | "kubernetes";
  /** One pass now, beside the tick (tests, benchmarks); what it did, as a value. */
  pass(): Promise<Report>;
  /** Stops the tick and waits for the pass in flight; what the loop holds (watches, connections) is released. */
  stop(): Promise<void>;
}

/** The mesh loop's pass: the keep pass's report, or null when this process does not lead the store or was stopped meanwhile. */
export type MeshPass = PassReport | null;
/** The Kubernetes loop's pass: the judgements recorded while it ran (the keeper keeps its last 1000). */
export type KubernetesPass = readonly Judged[];

export interface ServeLoopsOptions {
  readonly controller: MeshController;
  readonly agents: AgentsEnv;
  readonly tickMs: number;
  /** The leadership seam: false → the loops decide but perform and chain nothing. */
  readonly shouldAct: () => boolean;
  readonly log: (message: string, fields?: Record<string, unknown>) => void;
  /** What an operator should look at (a node that stopped answering). */
  readonly warn: (message: string, fields?: Record<string, unknown>) => void;
  readonly onError: (target: ServeLoop<unknown>["target"], error: unknown) => void;
  /** Issue 35: the mesh loop's first pass reuses the describes made since then (the takeover's, at start). */
  readonly startedMs?: number;
}

export interface ServeLoops {
  readonly mesh: ServeLoop<MeshPass>;
  readonly kubernetes: ServeLoop<KubernetesPass>;
  /**
   * Issue 37 (F1): the node leases' keeper. Unlike the loops it runs on every server of the store, leader or not: a
   * renewal is a read, so a standby keeps every leased agent alive through the leader's crash or pause.
   */
  readonly leases: LeaseKeeper;
  /** Stops the lease keeper, the mesh loop, then the Kubernetes loop, each after what it has in flight. */
  stop(): Promise<void>;
}

export function startServeLoops(o: ServeLoopsOptions): ServeLoops {
  // Issue 35: the first pass runs behind the listener; its end is logged once, so a reader (and bench/scale/serve-start)
  // can tell when the lists reflect a fresh look at every node.
  let first = true;
  const onPass = (report: PassReport) => {
    if (!first) return;
    first = false;
    o.log("first pass done", { judged: report.judged, acted: report.acted.length });
  };
  const watch = startTargetWatch(o.controller, o.tickMs, (error) => o.onError("mesh", error), {
    shouldAct: o.shouldAct,
    onPass,
    ...(o.startedMs === undefined ? {} : { firstPassReusesSinceMs: o.startedMs }),
  });
  const mesh: ServeLoop<MeshPass> = {
    target: "mesh",
    pass: () => watch.pass(),
    stop: () => watch.stop(),
  };
  const keeping = startKubernetesKeeper(
    keeperPorts(o.agents, { shouldAct: o.shouldAct, log: o.log }),
    o.tickMs,
    (error) => o.onError("kubernetes", error),
  );
  const kubernetes: ServeLoop<KubernetesPass> = {
    target: "kubernetes",
    pass: () => judgedDuring(keeping.keeper),
    stop: () => keeping.stop(),
  };
  const warnShortLeases = shortLeaseWarner(o.controller, o.warn);
  const leases = startLeaseKeeper(o.controller, {
    tickMs: o.tickMs,
    onRound: (round) => warnShortLeases(round.nodes),
    onMissed: (nodeId) =>
      o.log("a node lease renewal was not answered: the node is recorded suspect", { node: nodeId }),
    onError: (error) => o.onError("mesh", error),
  });
  // Read from the store once a second (no node contacted): a node's change is said within a second of its recording.
  const liveness = startLivenessAlerts(() => o.controller.knownTargets(), {
    everyMs: 1_000,
    onChange: (change) => {
      const line = livenessMessage(change);
      (line.level === "warn" ? o.warn : o.log)(line.message, { ...change });
    },
  });
  return {
    mesh,
    kubernetes,
    leases,
    stop: async () => {
      liveness.stop();
      await leases.stop();
      await mesh.stop();
      await kubernetes.stop();
    },
  };
}

async function judgedDuring(keeper: KubernetesKeeper): Promise<KubernetesPass> {
  const mark = keeper.judged.at(-1);
  await keeper.pass();
  return keeper.judged.slice(mark === undefined ? 0 : keeper.judged.lastIndexOf(mark) + 1);
}
