/**
 * The operator's escape hatches for a node (issue 16): `berth node cordon|uncordon|forget|drain`. Each is chained with
 * who asked and why; the CLI reaches these through `berth serve`'s API when one runs (src/cli/node-admin.ts).
 *
 * - cordon / uncordon: the node gets no new placements (the engine's `cordoned` constraint says why in the explain);
 *   what runs there stays.
 * - forget: the node is declared dead for good. Its placements are taken off it (`mesh_moved`, authority `forget`)
 *   and its unsettled decisions released, in one transaction, so its agents can be deployed elsewhere at once; a
 *   running `berth serve` places again those whose policy allows. If the node ever answers again with its key, the
 *   loop stops and unloads its copies of those placements on the operator's authority (core/mesh/keep.ts).
 * - remove (issue 36, `berth nodes remove`): a forgotten node leaves the list: its target row (address, key, tier,
 *   contacts) is deleted, chained as `peer.remove`. Refused, naming the node's state, unless it was forgotten first:
 *   forget is what releases its placements, and remove must never be a way round it. The forgotten mark and the moved
 *   records stay, so if the node is ever added again its old copies are still stopped and unloaded.
 * - drain: moves each agent off a live node, one at a time: a dry run first (somewhere else must fit, or the agent is
 *   left running), then stop, confirm stopped by the node's own status, take the record off, place elsewhere, and
 *   unload the stopped copy fenced on the generation seen. Never two copies at once: nothing is placed before the
 *   node has said the old copy is stopped.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { isInstanceRow, statusRowsOf } from "../../core/protocol/results.js";
import { err, ok, type Result } from "../../kit/result.js";
import type { PlaceReport } from "./dispatch.js";
import type { MoveRecords } from "./move-records.js";
import { type MoverDeps, moveAgent, teardownOrphan } from "./mover.js";
import { rebuildOrder, readRef } from "./stored-order.js";
import type { ControllerStore, PlacementRecord } from "./store.js";
import type { TargetInfo, Targets } from "./targets.js";
import type { Verb, VerbOptions, VerbResult } from "./verbs.js";

export interface NodeAdminDeps {
  readonly store: ControllerStore;
  readonly targets: Targets;
  readonly moves: MoveRecords;
  readonly mover: MoverDeps;
  readonly instance: (verb: Verb, instanceId: string, opts: VerbOptions) => Promise<VerbResult>;
  readonly clock: () => number;
  /** How long drain waits for the node to report a stopped copy. */
  readonly stopConfirmMs?: number;
  /** Issue 36: whether peers.json lists the address (a removed target it lists would be learned again at once). */
  readonly peersFileLists?: (addr: string) => boolean;
}

/** The target a node reference names (a learned one: its node id is known), or why none. */
export type NodeRefResult = Result<TargetInfo & { readonly node_id: string }>;

/** A node id, address or facts name, as `berth nodes list` shows them. */
export async function resolveNode(targets: Targets, ref: string): Promise<NodeRefResult> {
  const t = (await targets.resolve(ref)) ?? (await targets.list()).find((x) => x.name === ref) ?? null;
  if (t === null || t.node_id === null)
    return err(`no known node ${ref} (give a node id, address or name from \`berth nodes list\`)`);
  return ok(t as TargetInfo & { node_id: string });
}

export interface CordonResult {
  readonly node: string;
  readonly cordoned: boolean;
  /** false: it already was (nothing chained). */
  readonly changed: boolean;
}

export async function cordonNode(
  deps: NodeAdminDeps,
  ref: string,
  cordoned: boolean,
  reason: string | null,
  operator: JsonObject,
): Promise<CordonResult | { readonly error: string }> {
  const r = await resolveNode(deps.targets, ref);
  if (!r.ok) return { error: r.error };
  const node = r.value.node_id;
  const changed = await deps.moves.setCordon(node, cordoned, reason, {
    source: "trust",
    kind: cordoned ? "node.cordon" : "node.uncordon",
    payload: { node, addr: r.value.addr, reason, operator },
  });
  return { node, cordoned, changed };
}

export interface ForgetResult {
  readonly node: string;
  readonly released: ReadonlyArray<{ readonly instance_id: string; readonly name: string }>;
  readonly decisions: readonly string[];
}

export async function forgetNode(
  deps: NodeAdminDeps,
  ref: string,
  reason: string,
  operator: JsonObject,
): Promise<ForgetResult | { readonly error: string }> {
  const r = await resolveNode(deps.targets, ref);
  if (!r.ok) return { error: r.error };
  const node = r.value.node_id;
  const done = await deps.moves.forget(node, reason, {
    forgotten: (released) => ({
      source: "trust",
      kind: "node.forget",
      payload: {
        node,
        addr: r.value.addr,
        reason,
        operator,
        instances: released.instances,
        decisions: released.decisions,
      },
    }),
    decision: (decisionId, name) => ({
      source: "placement",
      kind: "workload.refuse",
      payload: { phase: "forgotten", decision_id: decisionId, node, name, reason, operator },
    }),
  });
  return {
    node,
    released: done.instances.map((m) => ({ instance_id: m.instance_id, name: m.name })),
    decisions: done.decisions,
  };
}

export interface RemoveResult {
  readonly node: string;
  readonly addr: string;
  readonly removed: true;
}

/** The words for a node that is not forgotten: its marks and liveness, as `berth nodes list` shows them. */
function stateOf(target: TargetInfo, cordoned: boolean): string {
  return [cordoned ? "cordoned" : "", target.liveness].filter(Boolean).join(", ");
}

export async function removeNode(
  deps: NodeAdminDeps,
  ref: string,
  reason: string,
  operator: JsonObject,
): Promise<RemoveResult | { readonly error: string; readonly refused?: true }> {
  const r = await resolveNode(deps.targets, ref);
  if (!r.ok) return { error: r.error };
  const node = r.value.node_id;
  const admin = await deps.moves.admin(node);
  if (admin.forgotten_ms === null) {
    return {
      refused: true,
      error: `node ${ref} is ${stateOf(r.value, admin.cordoned)}, not forgotten: only a forgotten node can be removed (forget releases what it runs); \`berth node forget ${ref} --reason …\` first, or \`berth node drain ${ref} --reason …\` to move its agents off a live node`,
    };
  }
  if (deps.peersFileLists?.(r.value.addr)) {
    return {
      refused: true,
      error: `node ${ref} is listed in peers.json (${r.value.addr}): berth would learn it again at once; take it out of peers.json first`,
    };
  }
  await deps.targets.remove(r.value.addr, {
    source: "trust",
    kind: "peer.remove",
    payload: { node, addr: r.value.addr, key: r.value.key, reason, operator },
  });
  return { node, addr: r.value.addr, removed: true };
}

export type DrainStep =
  | {
      readonly instance_id: string;
      readonly name: string;
      readonly outcome: "moved";
      readonly to_node: string;
      readonly to_instance: string;
      readonly old_copy: "unloaded" | "left_stopped";
    }
  | {
      readonly instance_id: string;
      readonly name: string;
      readonly outcome: "left_running" | "stopped_not_placed" | "failed";
      readonly reason: string;
    }
  /** Issue 33: a person had stopped the agent: its stopped copy is unloaded here and it is placed nowhere else. */
  | {
      readonly instance_id: string;
      readonly name: string;
      readonly outcome: "stopped_by_operator";
      readonly old_copy: "unloaded" | "left_stopped";
      readonly reason: string;
    };

export interface DrainResult {
  readonly node: string;
  readonly steps: readonly DrainStep[];
}

const LIVE = new Set(["running", "starting", "loading", "unhealthy", "backoff"]);

/** The node's own word on the instance: its state and generation, or why there is none. */
async function nodeRow(
  deps: NodeAdminDeps,
  node: string,
  instanceId: string,
): Promise<{ state: string; generation: number | null } | { error: string }> {
  const r = await deps.targets.call(
    node,
    "status",
    { instance_id: null, include_departed: false },
    { timeoutMs: deps.mover.callTimeoutMs },
  );
  if (r.kind !== "ok") return { error: r.kind === "refused" ? `${r.code}: ${r.reason}` : r.reason };
  const row = statusRowsOf(r.result)
    .filter(isInstanceRow)
    .find((x) => x.instance_id === instanceId);
  if (!row) return { state: "absent", generation: null };
  return { state: row.state, generation: row.generation };
}

export async function drainNode(
  deps: NodeAdminDeps,
  ref: string,
  reason: string,
  operator: JsonObject,
  wait: (ms: number) => Promise<void>,
): Promise<DrainResult | { readonly error: string }> {
  const r = await resolveNode(deps.targets, ref);
  if (!r.ok) return { error: r.error };
  const node = r.value.node_id;
  if (!(await deps.targets.refresh(node))) {
    return {
      error: `node ${node} did not answer (${(await deps.targets.byNode(node))?.error ?? "no answer"}): drain moves agents off a live node; for a node that is gone for good, use \`berth node forget ${ref} --reason …\``,
    };
  }
  await deps.moves.setCordon(node, true, `drain: ${reason}`, {
    source: "trust",
    kind: "node.cordon",
    payload: { node, addr: r.value.addr, reason: `drain: ${reason}`, operator },
  });
  await deps.moves.append([
    { source: "trust", kind: "node.drain", payload: { phase: "request", node, reason, operator } },
  ]);
  const steps: DrainStep[] = [];
  const by: JsonObject = { ...operator, verb: "berth node drain", reason };
  // One at a time, re-reading the records each time (level-triggered: a record moved meanwhile is not moved twice).
  const done = new Set<string>();
  for (;;) {
    const p = (await deps.store.placements()).find((x) => x.node_id === node && !done.has(x.instance_id));
    if (!p) break;
    done.add(p.instance_id);
    const step = await drainOne(deps, node, p, reason, by, wait);
    steps.push(step);
  }
  await deps.moves.append([
    {
      source: "trust",
      kind: "node.drain",
      payload: { phase: "outcome", node, reason, operator, steps: steps.map((s) => ({ ...s })) },
    },
  ]);
  return { node, steps };
}

async function drainOne(
  deps: NodeAdminDeps,
  node: string,
  p: PlacementRecord,
  reason: string,
  by: JsonObject,
  wait: (ms: number) => Promise<void>,
): Promise<DrainStep> {
  const base = { instance_id: p.instance_id, name: p.name };
  // Issue 33: a stop is final. A drain empties the node of what a person stopped too, but places it nowhere: the
  // stopped copy is unloaded, fenced on the generation the node reports, and only a deploy or a start runs it again.
  if ((await deps.store.stoppedNames()).has(p.name)) {
    const seen = await nodeRow(deps, node, p.instance_id);
    if ("error" in seen)
      return {
        ...base,
        outcome: "failed",
        reason: `the node did not say what it holds (${seen.error}); left as it is`,
      };
    if (LIVE.has(seen.state))
      return {
        ...base,
        outcome: "left_running",
        reason: `stopped by its operator, yet the node reports it ${seen.state}; left as it is`,
      };
    const why = "stopped by its operator: not placed elsewhere; a deploy or `berth agent start` runs it again";
    const unload = await deps.instance("unload", p.instance_id, {
      operator: by,
      ...(seen.generation === null ? {} : { generation: seen.generation }),
    });
    return {
      ...base,
      outcome: "stopped_by_operator",
      old_copy: unload.kind === "ok" ? "unloaded" : "left_stopped",
      reason: why,
    };
  }
  // 1. somewhere else must fit before anything is stopped (a dry run, chained as an explain).
  const stored = await deps.moves.order(p.decision_id);
  if (stored === null)
    return {
      ...base,
      outcome: "left_running",
      reason: "no stored order for this placement (placed before this build); move it yourself",
    };
  const rebuilt = rebuildOrder(stored, node, readRef(deps.mover.processEnv));
  if (!rebuilt.ok) return { ...base, outcome: "left_running", reason: rebuilt.error };
  let dry: PlaceReport;
  try {
    dry = await deps.mover.place({ ...rebuilt.value, name: `${p.name}`, dry_run: true });
  } catch (error) {
    // A dry run checks no name; anything else it refuses (the package, the engine) leaves the agent where it is.
    return { ...base, outcome: "left_running", reason: `the dry run was refused: ${(error as Error).message}` };
  }
  if (dry.decision.placement === null)
    return {
      ...base,
      outcome: "left_running",
      reason: "no other node can take it (see `berth place … --dry-run`); left running here",
    };
  // 2. stop, and 3. confirm stopped by the node itself
  const stop = await deps.instance("stop", p.instance_id, { operator: by, for_move: true });
  if (stop.kind !== "ok")
    return {
      ...base,
      outcome: "failed",
      reason: `stop: ${stop.kind}${"reason" in stop ? ` (${stop.reason})` : ""}; left as it is`,
    };
  const deadline = deps.clock() + (deps.stopConfirmMs ?? 15_000);
  let seen: { state: string; generation: number | null } | { error: string } = await nodeRow(deps, node, p.instance_id);
  while (("error" in seen || LIVE.has(seen.state)) && deps.clock() < deadline) {
    await wait(200);
    seen = await nodeRow(deps, node, p.instance_id);
  }
  if ("error" in seen || LIVE.has(seen.state)) {
    return {
      ...base,
      outcome: "failed",
      reason: `the node did not confirm it stopped (${"error" in seen ? seen.error : seen.state}); nothing was placed elsewhere`,
    };
  }
  const generation = seen.generation;
  // 4. take the record off and place elsewhere
  const moved = await moveAgent(
    deps.mover,
    p,
    "drain",
    {
      source: "placement",
      kind: "workload.lifecycle",
      payload: { phase: "lifecycle", instance_id: p.instance_id, node, name: p.name, action: "drain", reason, by },
    },
    `drain: ${reason}`,
  );
  if (!moved.ok || moved.value.placed === null) {
    return {
      ...base,
      outcome: "stopped_not_placed",
      reason: moved.ok
        ? moved.value.note
        : `${moved.error.reason}; its copy is stopped here and a running berth serve places it again`,
    };
  }
  // 5. the stopped copy is unloaded, fenced on the generation the node reported
  const unload = await teardownOrphan(deps.mover, moved.value.moved, "unload", generation, by);
  return {
    ...base,
    outcome: "moved",
    to_node: moved.value.placed.node_id,
    to_instance: moved.value.placed.instance_id,
    old_copy: unload.ok && unload.value.gone ? "unloaded" : "left_stopped",
  };
}
