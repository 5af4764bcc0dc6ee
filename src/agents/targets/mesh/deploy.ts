/**
 * Mesh agents (issue 7 §2): the shell around `core/agents/mesh-classify.ts`. One deploy is a short level-triggered
 * loop, like the Kubernetes converge loop:
 *
 *   observe (describe every target, signed status of each, the controller's placements and unsettled decisions)
 *     ─▶ classify (pure) ─▶ act once ─▶ observe again … until a row needs no action, or a blocking row ends it
 *
 * Acting, by action:
 *   no-op / observe        nothing; answer with the instance
 *   settle-first           the controller settles (ask the node, adopt or release); then observe again. Never place.
 *   await-contact          nothing: a node holding our instance is silent, and a read error is never absence
 *   await-disappearance    nothing: a stop or unload is pending
 *   report-duplicates      nothing: report both, keep the older; only the user unloads one (`berth instance unload`)
 *   replace                unload through the controller carrying the fence's generation (the node refuses if the
 *                          instance changed since we looked); then observe again, which places
 *   place                  release placement records the nodes no longer hold, then `controller.place` with the
 *                          agent's identity and intent, so the node records both with the instance
 *
 * The only unload here is the fenced one of a `replace` row; nothing stops or unloads a started instance unless the
 * user asked by name (`berth agent replace`, `berth agent stop`).
 *
 * (About 550 lines, one concept: the mesh's rows of the deploy state machine, each row's effect next to the fence
 * that authorises it.)
 */
import { failoverBoundMs, leaderTiming } from "../../../core/mesh/leader-lease.js";
import { leaseShorterThanOutage, leaseWarning, STANDBY_HELD_MS } from "../../../core/mesh/lease.js";
import { leaderTtlFromEnv } from "../../../store/leader.js";
import type { Result } from "../../../kit/result.js";
import {
  type AgentDeployResult,
  type DeployRound,
  deployAnswers,
  pendingEditNote,
} from "../../../core/agents/deploy-event.js";
import {
  classifyMesh,
  classifyMeshReplace,
  type InstanceFence,
  type MeshAction,
  type MeshRow,
} from "../../../core/agents/mesh-classify.js";
import {
  type MeshAgentObservation,
  type NodeAnswer,
  type NodeInstanceRow,
  observeMeshAgent,
} from "../../../core/agents/mesh-observe.js";
import { isInstanceRow, type ResultOf, statusRowsOf } from "../../../core/protocol/results.js";
import type { AgentSpecDocument } from "../../../core/agents/spec.js";
import type { JsonObject } from "../../../core/crypto/canonical.js";
import type { NodeId } from "../../../core/crypto/ed25519.js";
import type { NodeClient } from "../../../mesh/client/node-client.js";
import {
  type AgentSpecSource,
  type MeshController,
  PlaceError,
  type PlaceOrderInput,
  type TargetInfo,
  type VerbOptions,
  type VerbResult,
} from "../../../mesh/controller/index.js";
import { type DeployPlan, meshPlan } from "../../../core/agents/deploy-plan.js";

export interface MeshAgentDeps {
  readonly controller: MeshController;
  /** Signs the read-only `status` calls made straight to each node (the controller's key). */
  readonly client: NodeClient;
  readonly statusTimeoutMs?: number;
}

/** What to run, resolved by the caller from the spec (`spec-file.ts`). */
export interface MeshDeployInput {
  readonly agent: string;
  readonly spec: AgentSpecDocument["spec"];
  /** The env with every `valueFrom` read (secret-env.ts): for the place body only, never an answer or a record. */
  readonly env: Readonly<Record<string, string>>;
  /** Issue 16: where each `valueFrom` value came from, kept by the controller instead of the value (stored-order.ts). */
  readonly envFrom?: Readonly<Record<string, { readonly file: string } | { readonly env: string }>>;
  readonly packageDir: string;
  readonly intent: string;
  /**
   * Issue 37: the spec file the deploy came from, kept by the controller with the decision so that the registry
   * record can be had back from the placement if this process dies between the node's start and `agent.remember`.
   */
  readonly source?: AgentSpecSource;
}

/** Rounds per deploy: replace (unload) → place is two; settle → replace → place is three. */
const MAX_ROUNDS = 4;

/** A node's held instances, from the status rows the node client has typed (core/protocol/results.ts). */
function instanceRows(result: ResultOf<"status">): NodeInstanceRow[] {
  return statusRowsOf(result)
    .filter(isInstanceRow)
    .map((r) => ({
      instance_id: r.instance_id,
      decision_id: r.decision_id,
      name: r.name,
      state: r.state,
      exit_code: r.exit_code,
      agent: r.agent,
      intent: r.intent,
      generation: r.generation,
      restarts: r.restarts ?? 0,
      started_ms: r.started_ms,
    }));
}

/** Observes one agent on every target the controller knows. */
export async function observeMesh(
  deps: MeshAgentDeps,
  agent: string,
  opts: { readonly settle?: boolean } = {},
): Promise<MeshAgentObservation> {
  // Read before any node is asked: only these records' identities may be judged stale (core/agents/mesh-observe.ts).
  const placedBefore = new Set((await deps.controller.placements()).map((p) => p.decision_id));
  // A plan (issue 36) settles nothing: an unsettled decision is its row, not something it resolves.
  const targets =
    opts.settle === false ? await deps.controller.describeTargets() : await deps.controller.refreshTargets();
  const answers = await Promise.all(targets.filter((t) => t.node_id !== null).map((t) => statusOf(deps, t)));
  // Issue 35: what the nodes said is what the lists that ask no node show next (a plan records nothing: it writes nothing).
  if (opts.settle !== false)
    await deps.controller.recordObservations(
      answers.flatMap((a) => (a.kind === "answered" ? [{ nodeId: a.nodeId as string, rows: a.rows }] : [])),
    );
  // The core judges synchronously: look up the chain position of every decision a node answered with first.
  const store = deps.controller.store;
  const seqs = new Map<string, number | null>();
  for (const a of answers) {
    if (a.kind !== "answered") continue;
    for (const row of a.rows)
      if (!seqs.has(row.decision_id))
        seqs.set(row.decision_id, (await store.decisionEvent(row.decision_id))?.seq ?? null);
  }
  return observeMeshAgent(agent, answers, {
    placements: await deps.controller.placements(),
    placedBefore,
    unsettled: await deps.controller.unsettled(),
    seqOf: (id) => seqs.get(id) ?? null,
  });
}

async function statusOf(deps: MeshAgentDeps, t: TargetInfo): Promise<NodeAnswer> {
  const nodeId = t.node_id as NodeId;
  if (t.boot_id === null || t.key === null)
    return { kind: "unreachable", nodeId, reason: t.error ?? "it did not answer describe" };
  const r = await deps.client.call(
    { addr: t.addr, nodeId, key: t.key, bootId: t.boot_id },
    "status",
    { instance_id: null, include_departed: false },
    { timeoutMs: deps.statusTimeoutMs ?? 10_000 },
  );
  if (r.kind !== "ok")
    return { kind: "unreachable", nodeId, reason: r.kind === "refused" ? `${r.code}: ${r.reason}` : r.reason };
  return { kind: "answered", nodeId, rows: instanceRows(r.result) };
}

function fenceJson(f: InstanceFence): JsonObject {
  return { node_id: f.nodeId, instance_id: f.instanceId, generation: f.generation };
}

function actionJson(a: MeshAction): string {
  return a.kind === "replace" ? `replace (${a.cause})` : a.kind;
}

function observationJson(o: MeshAgentObservation): JsonObject {
  const s = o.shown;
  return {
    instances: s.instances.map((i) => ({ ...i })),
    unsettled: [...s.unsettled],
    unobservable: s.unobservable.map((u) => ({ node_id: u.nodeId, instance_id: u.instanceId })),
    unreachable_nodes: s.unreachable_nodes.map((u) => ({ ...u })),
    unclaimed: s.unclaimed.map((u) => ({ ...u })),
  };
}

/** Node refs in the spec are node ids, target names or addresses; the place order takes node ids. */
function resolveRefs(targets: readonly TargetInfo[], refs: readonly string[], field: string): Result<string[]> {
  const ids: string[] = [];
  for (const ref of refs) {
    const t = targets.find((x) => x.node_id === ref || x.name === ref || x.addr === ref);
    if (t?.node_id == null)
      return {
        ok: false,
        error: `spec.mesh.${field}: no known node ${JSON.stringify(ref)} (give a node id, name or address from \`berth nodes list\`)`,
      };
    ids.push(t.node_id);
  }
  return { ok: true, value: ids };
}

function verbFailure(r: VerbResult): string {
  switch (r.kind) {
    case "ok":
      return "ok";
    case "refused":
      return `node ${r.node} refused (${r.code}: ${r.reason})`;
    case "unreachable":
    case "indeterminate":
      return `node ${r.node}: ${r.kind} (${r.reason})`;
    case "error":
      return `${r.code}: ${r.reason}`;
    default: {
      const never: never = r;
      return String(never);
    }
  }
}

/**
 * `berth deploy` of a mesh agent, and with `userReplace` the explicit `berth agent replace`. Returns one result; the
 * caller chains it as the `agent.deploy` event (`audit.ts`).
 */
export async function deployMeshAgent(
  deps: MeshAgentDeps,
  input: MeshDeployInput,
  opts: { readonly userReplace?: boolean } = {},
): Promise<AgentDeployResult> {
  const rounds: DeployRound[] = [];
  let replaced = false;
  const done = deployAnswers({ agent: input.agent, target: "mesh", intent: input.intent, rounds });
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const seen = await observeMesh(deps, input.agent);
    // The user's say applies to the first look only: after our own unload, the next round must simply place.
    const classified: { row: MeshRow; action: MeshAction } =
      opts.userReplace && !replaced
        ? classifyMeshReplace(seen.observation, input.intent)
        : classifyMesh(seen.observation, input.intent);
    const { row, action } = classified;
    if (seen.placedMeanwhile.length > 0) {
      // Another deploy placed while we asked the nodes: what they said predates it, so look again before acting.
      rounds.push({ row, action: "observe-again (placed meanwhile)", fence: null, observation: observationJson(seen) });
      continue;
    }
    const fence = action.kind === "replace" ? fenceJson(action.fence) : null;
    rounds.push({ row, action: actionJson(action), fence, observation: observationJson(seen) });
    switch (action.kind) {
      case "no-op": {
        const inst = seen.observation.instances.find((i) => i.fence === action.instance);
        const edited = inst !== undefined && inst.recordedIntent !== input.intent;
        const base = `${input.agent} is running as ${action.instance.instanceId} on node ${action.instance.nodeId}`;
        return done(
          true,
          replaced ? "started" : "unchanged",
          edited ? `${base}; ${pendingEditNote(action.instance.instanceId)}` : `${base}; nothing to do`,
          action.instance.instanceId,
          edited,
        );
      }
      case "observe":
        return done(
          true,
          "waiting",
          `${input.agent} is loaded as ${action.instance.instanceId} on node ${action.instance.nodeId} with this spec and not started (spec.mesh.start is false, or its start is in progress); nothing to do`,
          action.instance.instanceId,
        );
      case "settle-first": {
        const report = await deps.controller.settleReport();
        const still = (await deps.controller.unsettled()).filter((d) => action.decisionIds.includes(d.decision_id));
        if (still.length > 0) {
          const why = report.skipped.filter((s) => action.decisionIds.includes(s.decision_id)).map((s) => s.reason);
          return done(
            false,
            "blocked",
            `${input.agent}: a placement whose answer was lost (decision ${still.map((d) => d.decision_id.slice(0, 12)).join(", ")}) may have left an instance on node ${still.map((d) => d.node_id).join(", ")}, which could not be asked (${why.join("; ") || "no answer"}); nothing was placed, so there is never a second copy. Deploy again once the node is reachable.`,
          );
        }
        continue;
      }
      case "await-contact":
        return done(
          false,
          "blocked",
          `${input.agent}: node ${action.instances.map((i) => i.nodeId).join(", ")} holds ${action.instances.map((i) => i.instanceId).join(", ")} but did not answer; its state is unknown, so nothing was placed or replaced. Deploy again once it is reachable.`,
        );
      case "await-disappearance":
        return done(
          false,
          "blocked",
          `${input.agent}: ${action.fence.instanceId} on node ${action.fence.nodeId} is being stopped or unloaded (an answer was lost); nothing was placed beside it. Check with \`berth instance status ${action.fence.instanceId}\`, then deploy again.`,
          action.fence.instanceId,
        );
      case "report-duplicates":
        return done(
          false,
          "duplicates",
          `${input.agent} has ${1 + action.others.length} live instances (possible only after a fault): keeping the older ${action.keep.instanceId} on node ${action.keep.nodeId}; ` +
            `also running: ${action.others.map((o) => `${o.instanceId} on node ${o.nodeId}`).join(", ")}. Nothing was stopped; unload the extra one yourself with \`berth instance unload ID\`.`,
          action.keep.instanceId,
        );
      case "replace": {
        const f = action.fence;
        const unload = await deps.controller.instance("unload", f.instanceId, fencedUnload(f));
        if (unload.kind === "ok" || (unload.kind === "refused" && unload.code === "unknown_instance")) {
          replaced = true;
          continue;
        }
        // A refused fence (the node's `precondition_failed`, issue 14.3) means the instance changed since we looked:
        // look again (level-triggered) instead of acting.
        if (unload.kind === "refused" && unload.code === "precondition_failed") continue;
        return done(
          false,
          "failed",
          `${input.agent}: the fenced unload of ${f.instanceId} (generation ${f.generation}) did not complete: ${verbFailure(unload)}; nothing was placed.`,
          f.instanceId,
        );
      }
      case "place": {
        if (!(await releaseStaleRecords(deps, seen.staleRecords))) continue;
        return place(deps, input, seen, rounds, replaced);
      }
      default: {
        const never: never = action;
        throw new Error(`unreachable action ${JSON.stringify(never)}`);
      }
    }
  }
  return done(
    false,
    "failed",
    `${input.agent}: the instances kept changing while berth looked (${MAX_ROUNDS} rounds); nothing more was done. Deploy again.`,
  );
}

/** The unload options carrying the fence: the node unloads only the generation we observed. */
export function fencedUnload(f: InstanceFence): VerbOptions {
  const opts: VerbOptions & { readonly generation: number } = { generation: f.generation };
  return opts;
}

/**
 * The fence of a stale record's release. Its node answered without the instance, so no generation was observed: the
 * unload names one no instance can reach (generations count starts from 0), so the node can only answer that it
 * does not hold the instance (which releases the record) or refuse. A live instance is never touched, whatever
 * happened since the look.
 */
export const ABSENT_GENERATION = Number.MAX_SAFE_INTEGER;

/**
 * Releases placement records that only hold the agent's name (`staleRecords`, judged by identity). True when every
 * one is gone; false when a node did not confirm it holds nothing, and the caller looks again instead of placing.
 */
async function releaseStaleRecords(deps: MeshAgentDeps, stale: MeshAgentObservation["staleRecords"]): Promise<boolean> {
  let released = true;
  for (const record of stale) {
    const r = await deps.controller.instance("unload", record.instanceId, { generation: ABSENT_GENERATION });
    const gone = r.kind === "ok" || ((r.kind === "refused" || r.kind === "error") && r.code === "unknown_instance");
    if (!gone) released = false;
  }
  return released;
}

const NO_MESH_OPTIONS = {
  pin: null,
  prefer: [],
  avoid: [],
  allow_emulated: false,
  start: true,
  strategy: "spread" as const,
};

/** The place order a deploy of `input` sends (the spec's node refs resolved to node ids), or why it cannot. */
async function placeOrderOf(
  deps: MeshAgentDeps,
  input: MeshDeployInput,
): Promise<Result<PlaceOrderInput & { readonly agent: string; readonly intent: string }>> {
  const targets = await deps.controller.targets();
  const m = input.spec.mesh ?? NO_MESH_OPTIONS;
  const pin = m.pin === null ? { ok: true as const, value: [] as string[] } : resolveRefs(targets, [m.pin], "pin");
  const prefer = resolveRefs(targets, m.prefer, "prefer");
  const avoid = resolveRefs(targets, m.avoid, "avoid");
  for (const r of [pin, prefer, avoid]) if (!r.ok) return { ok: false, error: r.error };
  const order: PlaceOrderInput & { readonly agent: string; readonly intent: string } = {
    package: input.packageDir,
    name: input.agent,
    config: { mode: "service", args: [...input.spec.config.args], env: { ...input.env } },
    pin: pin.ok ? (pin.value[0] ?? null) : null,
    prefer: prefer.ok ? prefer.value : [],
    avoid: avoid.ok ? avoid.value : [],
    allow_emulated: m.allow_emulated,
    strategy: m.strategy,
    start: m.start,
    restart: input.spec.restart,
    agent: input.agent,
    intent: input.intent,
    env_from: { ...(input.envFrom ?? {}) },
  };
  return { ok: true, value: order };
}

async function place(
  deps: MeshAgentDeps,
  input: MeshDeployInput,
  seen: MeshAgentObservation,
  rounds: DeployRound[],
  replaced: boolean,
): Promise<AgentDeployResult> {
  const result = deployAnswers({ agent: input.agent, target: "mesh", intent: input.intent, rounds });
  const m = input.spec.mesh ?? NO_MESH_OPTIONS;
  const built = await placeOrderOf(deps, input);
  if (!built.ok) return result(false, "failed", `${input.agent}: ${built.error}`);
  const order = built.value;
  try {
    const report = await deps.controller.place(order, input.source ? { agentSpec: input.source } : {});
    if (report.placed) {
      const p = report.placed;
      // Issue 35: recorded at once for the lists that ask no node (`berth up --detach` runs no serve loop).
      await deps.controller.observeNode(p.node_id);
      const verb = replaced ? "replaced the previous instance:" : "";
      const warning = await leaseWarningFor(deps, p.node_id);
      return result(
        true,
        m.start ? "started" : "waiting",
        `${input.agent}: ${verb ? `${verb} ` : ""}${m.start ? "started" : "loaded"} ${p.instance_id} on node ${p.node_id}${warning ? `\nwarning: ${warning}` : ""}`,
        p.instance_id,
      );
    }
    if (report.unsettled) {
      return result(
        false,
        "blocked",
        `${input.agent}: the node's answer was lost and it could not be asked what it holds; the placement is unsettled and nothing else was tried. Deploy again (or \`berth unsettled --settle\`) once the node is reachable.`,
      );
    }
    const last = report.attempts.at(-1);
    const why =
      report.decision.placement === null
        ? "no eligible node"
        : last
          ? `${last.outcome}${last.reason ? `: ${last.reason}` : ""}`
          : "nothing was sent";
    return result(
      false,
      "failed",
      `${input.agent}: not placed (${why}). See the explain with \`berth place ${input.packageDir} --dry-run\`.`,
    );
  } catch (error) {
    if (!(error instanceof PlaceError)) throw error;
    if (error.code === "name_taken")
      return result(false, "failed", `${input.agent}: not placed: ${await nameHolder(deps, input.agent, seen, error)}`);
    // Issue 37 finding A: the store failed mid-dispatch; the decision is (or is about to be) unsettled, like a lost answer.
    if (error.code === "store_interrupted") return result(false, "blocked", `${input.agent}: ${error.message}.`);
    return result(false, "failed", `${input.agent}: place refused (${error.code}): ${error.message}.`);
  }
}

/**
 * Issue 37: the warning for an agent placed on a node whose lease is shorter than the failover bound while no standby
 * server renews the store's leases through a controller outage; null when there is nothing to say. A standby is a
 * long-lived process on the store besides the server that would fail: inside a `berth serve` (it competes for the
 * leadership) one other, from a CLI call two. Never fails a deploy that was done: a store that cannot be read says
 * nothing.
 */
async function leaseWarningFor(deps: MeshAgentDeps, nodeId: string): Promise<string | null> {
  try {
    const leaseMs = (await deps.controller.stamps.of(nodeId)).lease_ms;
    if (leaseMs === null) return null;
    const outageMs = failoverBoundMs(deps.controller.leaderTiming() ?? leaderTiming(leaderTtlFromEnv(process.env)));
    if (!leaseShorterThanOutage(leaseMs, outageMs)) return null;
    const needed = deps.controller.leaderTiming() === null ? 2 : 1;
    if ((await deps.controller.store.longLivedPeers(STANDBY_HELD_MS)) >= needed) return null;
    return leaseWarning(nodeId, leaseMs, outageMs);
  } catch {
    return null;
  }
}

/**
 * Who holds the agent's name when a place was refused for it (issue 21 case 6): a deploy that lost a race names the
 * winner and says to deploy again; only a workload that truly exists and is not this agent is worth unloading.
 */
async function nameHolder(
  deps: MeshAgentDeps,
  agent: string,
  seen: MeshAgentObservation,
  refusal: PlaceError,
): Promise<string> {
  const record = (await deps.controller.placements()).find((p) => p.name === agent);
  if (record !== undefined) {
    const unclaimed = seen.shown.unclaimed.some((u) => u.instance_id === record.instance_id);
    return unclaimed
      ? `the name is held by ${record.instance_id} on node ${record.node_id}, a workload that was not placed as this agent; unload it with \`berth instance unload ${record.instance_id}\` first, then deploy again.`
      : `the name was placed meanwhile as ${record.instance_id} on node ${record.node_id} (decision ${record.decision_id.slice(0, 12)}), by another deploy or placement; nothing was unloaded. Deploy again to see it.`;
  }
  const open = (await deps.controller.unsettled()).find((d) => d.name === agent);
  if (open !== undefined) {
    return `the name is held by decision ${open.decision_id.slice(0, 12)} on node ${open.node_id}, whose answer was lost; \`berth unsettled --settle\` (or a deploy once that node answers) resolves it.`;
  }
  // The store names a decision in flight with its owner (pid, host, epoch): say exactly that (issue 21 case 6).
  if (refusal.holder?.kind === "decision")
    return `${refusal.message}; nothing was unloaded. Deploy again once it has finished.`;
  return "the name is held by a placement another berth process is sending right now; nothing was unloaded. Deploy again once it has finished.";
}

/**
 * Issue 36, `berth deploy --dry-run` on the mesh: the deploy's first look and row, and where a placement would go and
 * why (the engine's explain, decided with nothing chained: controller.previewPlace). Nothing is settled, unloaded,
 * placed or chained; the look describes the nodes and asks each its status, as `berth agents` does.
 */
export async function planMeshDeploy(
  deps: MeshAgentDeps,
  input: MeshDeployInput,
  opts: { readonly userReplace?: boolean } = {},
): Promise<DeployPlan> {
  const seen = await observeMesh(deps, input.agent, { settle: false });
  const { row, action } = opts.userReplace
    ? classifyMeshReplace(seen.observation, input.intent)
    : classifyMesh(seen.observation, input.intent);
  let placement: DeployPlan["placement"] = null;
  if (action.kind === "place" || action.kind === "replace") {
    const built = await placeOrderOf(deps, input);
    if (!built.ok) placement = { node: null, explain: "", error: built.error };
    else {
      // The instance a replace would unload still holds the name and its memory: judged as if it were gone.
      const preview = await deps.controller.previewPlace(built.value);
      placement = preview.ok
        ? {
            node: preview.value.decision.placement?.node_id ?? null,
            explain: preview.value.explain,
            error: preview.value.decision.placement === null ? "no eligible node" : null,
          }
        : {
            node: null,
            explain: preview.error.constraints.map((c) => `  ${c.constraint}: ${c.detail}`).join("\n"),
            error: `${preview.error.code}: ${preview.error.message}`,
          };
    }
  }
  const inst =
    action.kind === "no-op" ? seen.observation.instances.find((i) => i.fence === action.instance) : undefined;
  const pendingEdit = inst !== undefined && inst.recordedIntent !== input.intent;
  return meshPlan(
    { agent: input.agent, intent: input.intent, row, observation: observationJson(seen), pendingEdit, placement },
    action,
  );
}

/** `berth agent status NAME` on the mesh: the observation, and what a deploy would do now (reads only). */
export async function meshAgentStatus(
  deps: MeshAgentDeps,
  agent: string,
  intent: string | null,
): Promise<{ observation: JsonObject; row: MeshRow; next: string }> {
  const seen = await observeMesh(deps, agent);
  const { row, action } = classifyMesh(seen.observation, intent ?? "");
  return { observation: observationJson(seen), row, next: actionJson(action) };
}

/** The instance a verb on the agent acts on: the live one (the older, with duplicates), else the newest. */
export async function currentInstance(
  deps: MeshAgentDeps,
  agent: string,
): Promise<{ instance: InstanceFence | null; seen: MeshAgentObservation }> {
  const seen = await observeMesh(deps, agent);
  const all = [...seen.observation.instances].sort((a, b) => a.placedSeq - b.placedSeq);
  const live = all.filter((i) => i.startup.kind === "started");
  return { instance: (live[0] ?? all.at(-1))?.fence ?? null, seen };
}
