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
 * per agent (issue 36), labelled `agent` and `target`, from one look at every agent (its node's or cluster's answer)
 * at most every AGENT_LOOK_MS, a look that takes longer than AGENT_LOOK_BUDGET_MS serving the previous one:
 *
 *   berth_agent_state{agent,target,state}           1 for the agent's state now (running, stopped, failed …), 0 for the others seen
 *   berth_agent_restarts{agent,target}              restarts its node's supervisor made since the operator last started it (mesh)
 *   berth_agent_last_start_timestamp_seconds{agent,target}   when its current process started (mesh; the node's clock)
 *   berth_agent_cpu_seconds_total{agent,target}     CPU time its running instance used, from its cgroup (mesh; `berth top`'s figure)
 *   berth_agent_memory_bytes{agent,target}          memory its running instance uses now, from its cgroup (mesh)
 *
 * and prom-client's process metrics (CPU, memory, event-loop lag), without its three `nodejs_active_*_total` gauges (a gauge
 * must not end in `_total`: `promtool check metrics`; `nodejs_active_*` by type stay). There is no keep-loop lag figure
 * (issue 13 asked for one; none is measured yet, and a figure nobody measures would be invented).
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { type AgentState, agentStates } from "../agents/index.js";
import { instanceAgent } from "../core/agents/labels.js";
import { instancesWithState } from "../mesh/controller/views.js";
import { agentsEnv } from "./routes/agents.js";
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
  dropTotalGauges(registry);
  agentSeries(registry, state);
  usageSeries(registry, state);

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
        const events =
          chain === "controller" ? (await state.controller.store.chain.tip()).seq + 1 : eventsIn(state, chain);
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
    observeRequest: (labels, seconds) =>
      latency.observe({ method: labels.method, route: labels.route, status: String(labels.status) }, seconds),
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

/**
 * prom-client adds `berth_nodejs_active_{handles,requests,resources}_total` beside `berth_nodejs_active_*` (the same
 * figures, by type); Prometheus reserves `_total` for counters, so the sums go and the per-type gauges stay.
 */
function dropTotalGauges(registry: Registry): void {
  for (const name of [
    "berth_nodejs_active_handles_total",
    "berth_nodejs_active_requests_total",
    "berth_nodejs_active_resources_total",
  ])
    registry.removeSingleMetric(name);
}

/** How often a scrape may look at the agents, and how long it waits for a look before serving the previous one. */
const AGENT_LOOK_MS = 5_000;
const AGENT_LOOK_BUDGET_MS = 3_000;

/** A look shared by a scrape's series: taken at most every AGENT_LOOK_MS, the previous one served past the budget. */
function cachedLook<T>(take: () => Promise<readonly T[]>): () => Promise<readonly T[]> {
  let last: { at: number; value: readonly T[] } = { at: 0, value: [] };
  let pending: Promise<readonly T[]> | null = null;
  return async () => {
    if (Date.now() - last.at < AGENT_LOOK_MS) return last.value;
    pending ??= take()
      .then((value) => {
        last = { at: Date.now(), value };
        return value;
      })
      .finally(() => {
        pending = null;
      });
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<readonly T[]>((resolve) => {
      timer = setTimeout(() => resolve(last.value), AGENT_LOOK_BUDGET_MS);
    });
    try {
      return await Promise.race([pending, budget]);
    } catch {
      return last.value;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Issue 36 (`berth top` in /metrics): a running mesh instance's cgroup usage, by the agent it runs. */
interface AgentUsage {
  readonly agent: string;
  readonly target: string;
  readonly cpu_usec: number;
  readonly memory_bytes: number;
}

async function agentUsage(state: ServerState): Promise<AgentUsage[]> {
  const rows = await instancesWithState(state.controller, state.client);
  return rows.flatMap((r) => {
    const u = (r.status?.usage ?? null) as { cpu_usec?: unknown; memory_bytes?: unknown } | null;
    if (
      (r.state !== "running" && r.state !== "unhealthy") ||
      typeof u?.cpu_usec !== "number" ||
      typeof u.memory_bytes !== "number"
    )
      return [];
    return [{ agent: instanceAgent(r), target: "mesh", cpu_usec: u.cpu_usec, memory_bytes: u.memory_bytes }];
  });
}

function usageSeries(registry: Registry, state: ServerState): void {
  const look = cachedLook(() => agentUsage(state));
  new Counter({
    name: "berth_agent_cpu_seconds_total",
    help: "CPU time the agent's running instance used, from its cgroup on its node (mesh agents; starts again from 0 with a new process)",
    labelNames: ["agent", "target"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const u of await look()) this.inc({ agent: u.agent, target: u.target }, u.cpu_usec / 1e6);
    },
  });
  new Gauge({
    name: "berth_agent_memory_bytes",
    help: "memory the agent's running instance uses now, from its cgroup on its node (mesh agents)",
    labelNames: ["agent", "target"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const u of await look()) this.inc({ agent: u.agent, target: u.target }, u.memory_bytes);
    },
  });
}

function agentSeries(registry: Registry, state: ServerState): void {
  const look = cachedLook<AgentState>(() => agentStates(agentsEnv(state)));
  // One look per scrape, shared by the three series (each collect asks; the look is cached for AGENT_LOOK_MS).
  const seenStates = new Map<string, Set<string>>();
  new Gauge({
    name: "berth_agent_state",
    help: "1 for the state each agent is in now (running, stopped, failed, unknown …), 0 for the other states it was seen in",
    labelNames: ["agent", "target", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const a of await look()) {
        const key = `${a.target}/${a.name}`;
        const seen = seenStates.get(key) ?? new Set<string>();
        seen.add(a.state);
        seenStates.set(key, seen);
        for (const s of seen) this.set({ agent: a.name, target: a.target, state: s }, s === a.state ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: "berth_agent_restarts",
    help: "restarts the node's supervisor made of the agent's instance since the operator last started it (mesh agents)",
    labelNames: ["agent", "target"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const a of await look())
        if (typeof a.restarts === "number") this.set({ agent: a.name, target: a.target }, a.restarts);
    },
  });
  new Gauge({
    name: "berth_agent_last_start_timestamp_seconds",
    help: "when the agent's current process last started, in seconds since the epoch by its node's clock (mesh agents)",
    labelNames: ["agent", "target"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const a of await look())
        if (typeof a.started_ms === "number") this.set({ agent: a.name, target: a.target }, a.started_ms / 1000);
    },
  });
}
