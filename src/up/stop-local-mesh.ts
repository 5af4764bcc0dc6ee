/**
 * Stopping what `berth up` started, in the only order that orphans nothing (issue 13): the agents first, through
 * berth and their still-running node daemons (an instance outlives its daemon by design, spec/mesh.md §13, so a
 * daemon stopped first would leave its agents running with nobody to stop them), then the daemons themselves.
 *
 * Instances placed by hand on the local nodes while berth was up (`berth deploy`, `berth place`) are stopped too,
 * each through `berth instance stop`: the local nodes are going away, and an instance left on one would have no
 * daemon watching it. One its node refuses to stop (its governance forbids it) keeps its node running, and the
 * report lists it with the command that stops it; `berth down` again then finishes the job.
 *
 * The same path serves Ctrl-C (or SIGTERM, SIGHUP) of a foreground `berth up` and `berth down`.
 */
import { runVerb } from "./run-verb.js";
import { stopProcess } from "./node-daemons.js";
import { isAlive, liveDaemons, readUpState, type UpState, writeUpState } from "./up-state.js";

export interface LeftInstance {
  readonly instance_id: string;
  readonly name: string;
  readonly node: string;
  readonly reason: string;
  readonly stop_with: string;
}

export interface StopReport {
  readonly stopped_agents: string[];
  readonly stopped_instances: Array<{ instance_id: string; name: string; node: string }>;
  readonly left_instances: LeftInstance[];
  readonly stopped_nodes: string[];
  /** Nodes kept running because an instance on them could not be stopped. */
  readonly kept_nodes: string[];
}

const reasonOf = (r: { stdout: string; stderr: string }) => {
  try {
    const doc = JSON.parse(r.stdout) as { error?: string; message?: string };
    if (doc.error ?? doc.message) return (doc.error ?? doc.message) as string;
  } catch {
    // not JSON: the text below
  }
  return (r.stderr || r.stdout).trim().replace(/^berth: /, "");
};

interface Placement {
  instance_id: string;
  name: string;
  node_id: string;
  /** The node's word for it (`berth instances`), `unknown` when its node did not answer. */
  state?: string;
}

/**
 * Issue 36: the states of an instance with nothing left to stop (it ended, or never started); `berth down` neither
 * stops nor reports those, so an instance stopped long ago is not reported again on every run.
 */
const NOTHING_TO_STOP = new Set([
  "stopped",
  "exited",
  "failed",
  "finished",
  "lost",
  "lease_stopped",
  "loaded",
  "absent",
]);

/** Whether a stop's answer (`agent stop` / `instance stop --json`) says the instance had stopped already. */
function stoppedBefore(stdout: string): boolean {
  try {
    const doc = JSON.parse(stdout) as { already_stopped?: unknown; result?: { already?: unknown } };
    return doc.already_stopped === true || doc.result?.already === true;
  } catch {
    return false;
  }
}

async function placementsOn(
  berthMain: string,
  home: string,
  nodeIds: ReadonlySet<string>,
): Promise<Placement[] | string> {
  const r = await runVerb(berthMain, home, ["instances", "--json"]);
  if (r.code !== 0) return reasonOf(r);
  const doc = JSON.parse(r.stdout) as { placements?: Placement[] };
  return (doc.placements ?? []).filter((p) => nodeIds.has(p.node_id));
}

/** Stops the agents, the hand-placed instances, then the daemons recorded in `home`'s up state; updates the state. */
export async function stopLocalMesh(o: {
  home: string;
  berthMain: string;
  log: (line: string) => void;
}): Promise<StopReport> {
  const report: StopReport = {
    stopped_agents: [],
    stopped_instances: [],
    left_instances: [],
    stopped_nodes: [],
    kept_nodes: [],
  };
  const state = readUpState(o.home);
  if (state === undefined) return report;
  const live = liveDaemons(state);
  if (live.length > 0) {
    // The agents stopped through berth (now or before): their instances need no stop of their own below.
    const handled = new Set<string>();
    for (const name of state.agents) {
      const stopped = await runVerb(o.berthMain, o.home, ["agent", "stop", name, "--json"]);
      if (stopped.code === 0) handled.add(name);
      // Issue 36: only what this run stopped is reported; an agent stopped before (by its user) is not news.
      if (stopped.code === 0 && stoppedBefore(stopped.stdout)) continue;
      if (stopped.code === 0) report.stopped_agents.push(name);
      o.log(
        stopped.code === 0
          ? `stopped agent ${name}`
          : `agent ${name} not stopped (berth agent stop: ${reasonOf(stopped)})`,
      );
    }
    const nodeName = new Map(state.nodes.map((n) => [n.node_id, n.name]));
    const placed = await placementsOn(o.berthMain, o.home, new Set(live.map((n) => n.node_id)));
    if (typeof placed === "string")
      o.log(`could not list the instances on the local nodes (${placed}); stopping the nodes anyway`);
    for (const p of typeof placed === "string" ? [] : placed) {
      if (handled.has(p.name) || NOTHING_TO_STOP.has(p.state ?? "unknown")) continue;
      const node = nodeName.get(p.node_id) ?? p.node_id;
      const r = await runVerb(o.berthMain, o.home, ["instance", "stop", p.instance_id, "--json"]);
      if (r.code === 0 && stoppedBefore(r.stdout)) continue;
      if (r.code === 0) {
        report.stopped_instances.push({ instance_id: p.instance_id, name: p.name, node });
        o.log(`stopped instance ${p.instance_id} (${p.name}) on ${node}, placed while berth was up`);
      } else {
        const left = {
          instance_id: p.instance_id,
          name: p.name,
          node,
          reason: reasonOf(r),
          stop_with: `berth instance stop ${p.instance_id}`,
        };
        report.left_instances.push(left);
        o.log(
          `instance ${p.instance_id} (${p.name}) on ${node} did not stop (${left.reason}); its node keeps running: \`${left.stop_with}\`, then \`berth down\``,
        );
      }
    }
  }
  const keep = new Set(report.left_instances.map((l) => l.node));
  const next: UpState = {
    ...state,
    nodes: state.nodes.map((n) => ({ ...n })),
    up: isAlive(state.up) && state.up.pid !== process.pid ? state.up : null,
  };
  for (const n of next.nodes) {
    if (keep.has(n.name) && isAlive(n.daemon)) {
      report.kept_nodes.push(n.name);
      continue;
    }
    const wasLive = isAlive(n.daemon);
    const gone = await stopProcess(n.daemon);
    if (gone) {
      if (wasLive) report.stopped_nodes.push(n.name);
      n.daemon = null;
    } else o.log(`node ${n.name} (pid ${n.daemon?.pid}) did not exit after SIGKILL`);
  }
  if (report.stopped_nodes.length > 0) o.log(`stopped nodes ${report.stopped_nodes.join(", ")}`);
  writeUpState(o.home, next);
  return report;
}
