/**
 * The controller's views for the lists (`GET /nodes`, `GET /instances`, `berth nodes list`, `berth instances`): targets
 * with a summary of their facts and the operator's marks, placements with what their node says of them now. Read
 * only; the API's routes (server/routes/mesh.ts) and the CLI's local backend show the same rows from here.
 */
import { type Requirement, selects } from "../../core/agents/labels.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { NodeId } from "../../core/crypto/ed25519.js";
import { judgeSeen, type ObservedInstance } from "../../core/mesh/instance-observation.js";
import type { NodeView } from "../../core/placement/index.js";
import { type InstanceStatusRowAnswer, isInstanceRow, statusRowsOf } from "../../core/protocol/results.js";
import type { NodeClient } from "../client/node-client.js";
import type { MeshController } from "./controller.js";
import { FAN_OUT, fanOut } from "./fan-out.js";
import type { NodeAdmin } from "./move-records.js";
import type { PlacementRecord } from "./store-records.js";
import type { TargetInfo } from "./targets.js";

function factsSummary(view: NodeView | undefined): JsonObject | null {
  const f = view?.facts;
  if (!f) return null;
  return {
    name: f.name,
    os: f.os,
    arch: f.arch,
    board: f.board,
    cpu_count: f.cpu.count,
    load1_milli: f.cpu.load1_milli,
    memory_total_bytes: f.memory.total_bytes,
    memory_available_bytes: f.memory.available_bytes,
    accelerators: f.accelerators.map((a) => a.id),
    labels: { ...f.labels },
    issued_at_ms: f.issued_at_ms,
  };
}

/** Targets with a summary of their facts; `berth nodes list` prints the same rows on its own files (src/cli). */
/**
 * The targets as the lists show them: each with its facts summary and (issue 16) the operator's marks on it, so a
 * cordoned or forgotten node says so wherever nodes are listed (`berth nodes list`, the dashboard).
 */
export async function targetsWithFacts(controller: MeshController, targets: readonly TargetInfo[]) {
  return targetRows(targets, await controller.nodeViews(), await controller.moves.admins());
}

/** The rows of the node lists from targets, the engine's views (facts) and the operator's marks (issue 35: also stored). */
export function targetRows(
  targets: readonly TargetInfo[],
  nodeViews: readonly NodeView[],
  admins: readonly NodeAdmin[],
) {
  const views = new Map(nodeViews.map((v) => [v.node_id as string, v]));
  const marks = new Map(admins.map((a) => [a.node_id, a]));
  return targets.map((t) => {
    const m = t.node_id === null ? undefined : marks.get(t.node_id);
    return {
      ...t,
      facts: factsSummary(t.node_id === null ? undefined : views.get(t.node_id)),
      cordoned: m?.cordoned ?? false,
      cordon_reason: m?.cordoned ? m.cordon_reason : null,
      forgotten_ms: m?.forgotten_ms ?? null,
      forget_reason: m?.forget_reason ?? null,
    };
  });
}

/** Issue 36: the nodes whose facts' labels (node.json `labels`) a parsed `-l` / `?labelSelector=` selects. */
export function targetsSelected<T extends { readonly facts: JsonObject | null }>(
  rows: readonly T[],
  requirements: readonly Requirement[],
): T[] {
  if (requirements.length === 0) return [...rows];
  return rows.filter((r) => selects(requirements, (r.facts?.labels as Record<string, string> | undefined) ?? {}));
}

/** One signed status per node (not per instance), so a list of hundreds of instances costs one call per node. */
async function nodeStates(
  controller: MeshController,
  client: NodeClient,
  nodeIds: ReadonlySet<string>,
): Promise<Map<string, Map<string, InstanceStatusRowAnswer>>> {
  const targets = await controller.targets();
  const out = new Map<string, Map<string, InstanceStatusRowAnswer>>();
  // Issue 35: at most FAN_OUT nodes asked at once, over the connector's warm connections (all at once, a thousand
  // TLS handshakes started together and timed out their own calls).
  await fanOut(
    targets.filter((t) => t.node_id !== null && nodeIds.has(t.node_id) && t.boot_id !== null && t.key !== null),
    FAN_OUT,
    async (t) => {
      const r = await client.call(
        { addr: t.addr, nodeId: t.node_id as NodeId, key: t.key as string, bootId: t.boot_id as string },
        "status",
        { instance_id: null, include_departed: false },
        { timeoutMs: 5_000 },
      );
      const answered = r.kind === "ok" ? statusRowsOf(r.result) : null;
      if (answered === null) return;
      const rows = new Map<string, InstanceStatusRowAnswer>();
      for (const row of answered.filter(isInstanceRow)) rows.set(row.instance_id, row);
      out.set(t.node_id as string, rows);
    },
  );
  return out;
}

/** Every placement with its node's state (absent: the node does not list it; unknown: the node did not answer). */
export async function instancesWithState(controller: MeshController, client: NodeClient) {
  const placements = await controller.placements();
  const states = await nodeStates(controller, client, new Set(placements.map((p) => p.node_id)));
  // Issue 35: what the nodes said is what the lists that ask no node show next, with its age.
  await controller.recordObservations([...states].map(([nodeId, rows]) => ({ nodeId, rows: [...rows.values()] })));
  return placements.map((p) => {
    const row = states.get(p.node_id)?.get(p.instance_id) ?? null;
    const state = states.has(p.node_id) ? (row ? row.state : "absent") : "unknown";
    return { ...p, state, status: row as JsonObject | null };
  });
}

/**
 * Issue 35: the lists' default reads the store only. An instance's state there is what its node last reported, as the
 * serve loop's pass, a deploy or a `--refresh` recorded it (store-observations.ts), shown with its age; "unknown" when
 * nothing was ever recorded of it. The lists say once, after the table, how to ask now when a row is old or unknown.
 */
export const NOT_SEEN = "unknown";

/** The one line the lists print after a stored table with a row never seen or seen too long ago. */
export const STORED_STATE_HINT =
  "(states as last recorded in the controller store, with their age: `never seen` or `stale` means no berth serve has observed these nodes lately; --refresh asks the nodes now, and a running berth serve (--server) answers live)";

/** True when a stored list has a row whose state is unknown or old (live rows carry no `seen_ms` and never count). */
export function storedStateNeedsHint(
  rows: ReadonlyArray<{ readonly seen_ms?: number | null }>,
  nowMs: number,
): boolean {
  return rows.some((r) => r.seen_ms !== undefined && judgeSeen(r.seen_ms, nowMs).kind !== "fresh");
}

/**
 * Every placement as stored, its node not asked (`--refresh` asks: instancesWithState): the state its node last
 * reported (the node's own word, "absent" when its verified answer did not list it) and when, or NOT_SEEN.
 */
export function storedInstances(
  placements: readonly PlacementRecord[],
  observations: ReadonlyMap<string, ObservedInstance>,
) {
  return placements.map((p) => {
    const o = observations.get(p.instance_id);
    if (o === undefined)
      return { ...p, state: NOT_SEEN, status: null as JsonObject | null, seen_ms: null as number | null };
    const status: JsonObject = { state: o.lifecycle, restarts: o.restarts, pid: o.pid, started_ms: o.started_ms };
    return {
      ...p,
      state: o.lifecycle ?? o.state,
      status: status as JsonObject | null,
      seen_ms: o.seen_ms as number | null,
    };
  });
}
