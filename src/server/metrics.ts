/**
 * `GET /metrics` (issue 13, Operable): Prometheus text from prom-client, one registry per server (never the global
 * one, so two servers in one process do not mix). What the controller knows is read from the store at scrape time —
 * the CLI beside the server writes the same SQLite files, so a counter kept in this process would miss its work:
 *
 *   berth_decisions{state}            placement decisions by state (dispatching, placed, unplaced, unsettled)
 *   berth_unsettled_decisions         decisions whose lost answer is not reconciled yet
 *   berth_placement_attempts{outcome} dispatch attempts by outcome (placed, refused, unreachable, indeterminate, gate_denied)
 *   berth_placements{route}           placement records (native, emulated)
 *   berth_nodes{liveness}             learned nodes by liveness as this controller last saw them (no node is contacted)
 *   berth_chain_events_total{chain}   events appended to each chain this server holds, by any process
 *   berth_api_request_duration_seconds{method,route,status}   this server's requests
 *
 * and prom-client's process metrics (CPU, memory, event-loop lag). There is no reconcile-loop lag: the mesh has no
 * reconcile loop yet (issue 13 asks for one); a figure for a loop that does not run would be invented.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { CHAIN_NAMES, headSeq, openChainReader } from "./chains.js";
import type { ServerState } from "./state.js";

const DECISION_STATES = ["dispatching", "placed", "unplaced", "unsettled"] as const;
const LIVENESS = ["unknown", "alive", "suspect", "dead"] as const;
/** dispatch.ts `AttemptOutcome`; an attempt still `sending` has none yet. */
const ATTEMPT_OUTCOMES = ["placed", "refused", "unreachable", "indeterminate", "gate_denied"] as const;

export interface ServerMetrics {
  readonly registry: Registry;
  observeRequest(labels: { method: string; route: string; status: number }, seconds: number): void;
}


export function serverMetrics(state: ServerState): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "berth_" });

  new Gauge({
    name: "berth_decisions",
    help: "placement decisions in the controller store by state",
    labelNames: ["state"],
    registers: [registry],
    async collect() {
      const counts = await state.controller.store.countBy("decisions_by_state");
      for (const s of DECISION_STATES) this.set({ state: s }, counts.get(s) ?? 0);
    },
  });
  new Gauge({
    name: "berth_unsettled_decisions",
    help: "decisions whose lost answer is not reconciled yet (berth unsettled)",
    registers: [registry],
    async collect() {
      this.set((await state.controller.unsettled()).length);
    },
  });
  new Gauge({
    name: "berth_placement_attempts",
    help: "dispatch attempts (one per candidate node tried) by outcome",
    labelNames: ["outcome"],
    registers: [registry],
    async collect() {
      const counts = await state.controller.store.countBy("attempts_by_outcome");
      for (const outcome of ATTEMPT_OUTCOMES) this.set({ outcome }, counts.get(outcome) ?? 0);
    },
  });
  new Gauge({
    name: "berth_placements",
    help: "placement records (one per placed instance) by route",
    labelNames: ["route"],
    registers: [registry],
    async collect() {
      const counts = await state.controller.store.countBy("placements_by_route");
      for (const r of ["native", "emulated"]) this.set({ route: r }, counts.get(r) ?? 0);
    },
  });
  new Gauge({
    name: "berth_nodes",
    help: "learned nodes by liveness as this controller last saw them (a scrape contacts no node)",
    labelNames: ["liveness"],
    registers: [registry],
    async collect() {
      const counts = new Map<string, number>();
      for (const v of await state.controller.nodeViews()) counts.set(v.liveness, (counts.get(v.liveness) ?? 0) + 1);
      for (const l of LIVENESS) this.set({ liveness: l }, counts.get(l) ?? 0);
    },
  });
  // A chain is append-only, so its length is a counter; the increments are whatever was appended since the last scrape.
  const seen = new Map<string, number>();
  new Counter({
    name: "berth_chain_events_total",
    help: "events appended to each audit chain this server holds (by this server, the CLI, or berth up)",
    labelNames: ["chain"],
    registers: [registry],
    async collect() {
      for (const chain of CHAIN_NAMES) {
        const events = chain === "controller" ? (await state.controller.store.chain.tip()).seq + 1 : eventsIn(state, chain);
        const delta = events - (seen.get(chain) ?? 0);
        if (delta > 0) this.inc({ chain }, delta);
        else if (!seen.has(chain)) this.inc({ chain }, 0);
        seen.set(chain, Math.max(events, seen.get(chain) ?? 0));
      }
    },
  });
  const latency = new Histogram({
    name: "berth_api_request_duration_seconds",
    help: "time to answer a request, by method, matched route (`unmatched` for none) and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return {
    registry,
    observeRequest: (labels, seconds) => latency.observe({ method: labels.method, route: labels.route, status: String(labels.status) }, seconds),
  };
}

function eventsIn(state: ServerState, chain: "controller" | "k8s"): number {
  const reader = openChainReader(state, chain);
  if (reader === null) return 0;
  try {
    return headSeq(reader.db, reader.chainId) + 1;
  } finally {
    reader.close();
  }
}
