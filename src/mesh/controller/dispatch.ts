/**
 * `place(order)` (spec/mesh.md §9): prepare → refresh → gate → decide → chain the decision → dispatch → explain.
 * (About 660 lines, one concept: §9.2's steps in order, each a few lines; the store-away hand-over of issue 37 belongs
 * to the dispatch it interrupts.)
 *
 *   order ─validate─▶ package verified ─▶ targets described ─▶ place verdicts ─▶ engine decision
 *         ─▶ [commit: decision event + dispatching row]   (decision_id = that event's hash; nothing sent before)
 *         ─▶ candidate 1 ─▶ candidate 2 … (winner first, then the other eligible ones in rank order; pinned: only
 *            the pinned node) until one places or the dispatch must stop
 *
 * Structural rules, each protecting an invariant of §1:
 * - the decision is chained and committed before any request leaves, and every request carries its hash (I4);
 * - an attempt is marked `sending` before the connection opens, so a crash can never hide a request (§14.2);
 * - a lost answer (indeterminate) is reconciled with that node before anything else; if it cannot be, the dispatch
 *   stops and the decision stays unsettled: no other candidate is tried while one may hold the instance (I1);
 * - every attempt outcome commits with its chained event, and a non-placed one names its `next` (I7).
 */

import type { EventDraft } from "../../core/chain/event.js";
import { canonicalJson, type JsonObject } from "../../core/crypto/canonical.js";
import { sha256 } from "../../core/crypto/tagged.js";
import type { GateSummary } from "../../core/governance/summary.js";
import { candidatesDocumentOf, decisionWithoutCandidates } from "../../core/placement/candidates-document.js";
import {
  decide,
  dispatchOrder,
  type ExplainAttempt,
  historyReads,
  type PlacementDecision,
  withInFlight,
  parsePlacementInputWithParts,
  renderExplain,
  type ScoringWeights,
} from "../../core/placement/index.js";
import { isStoreAway } from "../../store/open.js";
import { outcomeOf } from "../client/node-client.js";
import { consult, contextOf, type GateSettings, gatePolicyOf, placeVerdicts } from "./gate.js";
import type { AgentSpecSource, MoveRecords } from "./move-records.js";
import { type PlaceOrder, type PlaceOrderInput, PlaceOrderSchema } from "./order.js";
import type { ControllerPolicy, PolicyFiles } from "./policy.js";
import { type PreparedPackage, preparePackage, workloadRecordOf, workloadSpecOf } from "./prepare.js";
import { failureText, reconcileLostAnswer } from "./reconcile.js";
import {
  type ControllerStore,
  type DecisionId,
  type NameHolder,
  NameTaken,
  type PlacementRecord,
  type WorkloadRecord,
} from "./store.js";
import { envFromProblem, storedOrderOf } from "./stored-order.js";
import type { HeldPlacement, InFlightPlacements } from "./in-flight.js";
import { instanceOf } from "./store-placements.js";
import type { Targets } from "./targets.js";

/** §16 fixed `next` texts. */
export const NEXT_CANDIDATE = "trying the next candidate";
/** Issue 36 item 5: the last candidate (a --pin has only one) says so instead of promising a next one. */
export const NO_CANDIDATE_LEFT = "no candidate left";
export const STOPPED = "stopped: the target may hold the instance";

export type AttemptOutcome = "placed" | "refused" | "unreachable" | "indeterminate" | "gate_denied";

/** §9.5 Attempt, plus what explain shows. */
export interface Attempt {
  readonly node_id: string;
  readonly variant: string;
  readonly outcome: AttemptOutcome;
  readonly code: string | null;
  readonly reason: string | null;
  readonly next: string | null;
  readonly instance_id: string | null;
}

/** §9.5 PlaceReport. */
export interface PlaceReport {
  readonly decision: PlacementDecision;
  readonly decision_id: string;
  readonly explain: string;
  readonly attempts: readonly Attempt[];
  readonly placed: PlacementRecord | null;
  readonly unsettled: boolean;
}

export type PlaceErrorCode = "invalid_order" | "prepare" | "decision" | "name_taken" | "store_interrupted";

/**
 * The errors of §9.2 steps 1, 2, 5 and 6, and `store_interrupted` (issue 37 finding A: the store failed while the
 * decision was being dispatched; retryable, see `handOver`): `place()` rejects only with these.
 */
export class PlaceError extends Error {
  override name = "PlaceError";
  constructor(
    readonly code: PlaceErrorCode,
    message: string,
    readonly constraints: ReadonlyArray<{ constraint: string; detail: string }> = [],
    /** name_taken: who holds the name (a placement, or a decision in flight and its owner). */
    readonly holder: NameHolder | null = null,
  ) {
    super(message);
  }
}

export interface Timeouts {
  /** describe, status, logs, start, unload (§4.9: 20 s). */
  readonly callMs: number;
  /** place and load (§4.9: 280 s). */
  readonly placeMs: number;
  /** describe, including the refresh before every placement (§9.2 step 3: 5 s). */
  readonly describeMs: number;
}

/** Test seams for crash tests (§18.3): called at the named points of a dispatch. */
export interface DispatchHooks {
  /** After the decision committed, before the first attempt is recorded. */
  readonly afterDecision?: (decisionId: string) => void | Promise<void>;
  /** After an attempt was recorded `sending`, before the connection opens. */
  readonly afterAttemptBegun?: (decisionId: string, nodeId: string) => void | Promise<void>;
}

export interface DispatchDeps {
  readonly store: ControllerStore;
  readonly targets: Targets;
  readonly policyFiles: PolicyFiles;
  readonly dataDir: string;
  readonly controllerId: string;
  readonly clock: () => number;
  /** Parsed once, when the controller was made (`scoringWeightsSchema`). */
  readonly weights: ScoringWeights;
  readonly gate: GateSettings;
  readonly timeouts: Timeouts;
  readonly hooks: DispatchHooks;
  /** Reads the policy files, chains what changed and applies the peers file. */
  readonly readPolicy: (learn: boolean) => Promise<ControllerPolicy>;
  /** Issue 16: cordons (the engine's `cordoned`) and the stored order a reschedule reruns (move-records.ts). */
  readonly moves?: MoveRecords;
  /** Issue 35: the placements this process is dispatching, weighed by its next decisions (in-flight.ts). */
  readonly inFlight?: InFlightPlacements;
  /**
   * Issue 33: brings the nodes up to the controller's published revocation list (revocation-push.ts) and says, per
   * node still behind it, why: such a node gets no placement until it has the latest list.
   */
  readonly revocationLag?: (
    nodes: readonly string[],
    policy: ControllerPolicy,
    push: boolean,
  ) => Promise<ReadonlyMap<string, string>>;
}

/**
 * What the agents layer gives `place()` beside the order, kept with the decision and never sent or chained: the spec
 * of the deploy (issue 37), so the registry record can be had back from the placement if the deploy dies before it.
 */
export interface PlaceExtras {
  readonly agentSpec?: AgentSpecSource;
}

export async function placeOrder(
  deps: DispatchDeps,
  input: PlaceOrderInput,
  extras: PlaceExtras = {},
): Promise<PlaceReport> {
  // 1. validate
  const parsed = PlaceOrderSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PlaceError(
      "invalid_order",
      `place order: field ${issue?.path.map(String).join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
    );
  }
  const order = parsed.data;
  const envFrom = envFromProblem(order);
  if (envFrom !== null) throw new PlaceError("invalid_order", envFrom);
  const policy = await deps.readPolicy(true);
  // 2. prepare
  const prepared = preparePackage(order.package, deps.dataDir, policy);
  if (!prepared.ok) {
    await deps.store.appendAll([
      {
        source: "placement",
        kind: "workload.refuse",
        payload: { phase: "prepare", name: order.name, package: order.package, error: prepared.error, constraints: [] },
      },
    ]);
    throw new PlaceError("prepare", prepared.error);
  }
  const pkg = prepared.value;
  const name = order.name ?? pkg.statement.name;
  const workload = workloadRecordOf(pkg);
  // 3. refresh, with its stored key, every target whose facts cannot be reused (issue 19, targets.ts refreshStale)
  await deps.targets.refreshStale();
  // 4. gate workload.place for every target in the view; the verdicts committed as one summary the decision names
  // (issue 35, gate.ts `placeVerdicts`)
  const views = await deps.targets.views();
  const gatePolicy = gatePolicyOf(policy, deps.gate);
  // Issue 33: a node that does not hold the controller's latest revocation list is refused here (after a push the
  // refresh just made possible), whatever the gate says, so nothing revoked can be placed on a node that would not know.
  // A dry run sends nothing: it says which nodes are behind without pushing to them.
  const lag =
    deps.revocationLag === undefined
      ? new Map<string, string>()
      : await deps.revocationLag(
          views.map((v) => v.node_id),
          policy,
          !order.dry_run,
        );
  const { verdicts, summary } = placeVerdicts(
    views,
    (tier) => contextOf(workload, tier, deps.controllerId, false),
    gatePolicy,
    lag,
  );
  // Committed in the transaction of what they led to, just before it: the decision, or the engine's refusal (issue
  // 19). Nothing leaves before that commit, and no record is made without them.
  const gate = summary.ref as unknown as JsonObject;
  // 5. the engine
  const { decision, held } = await runEngine(
    deps,
    order,
    name,
    pkg,
    views,
    verdicts,
    summary,
    policy,
    (await deps.moves?.cordoned()) ?? [],
  );
  // Issue 35: from its decision until its dispatch ends, the winner is held in this process's in-flight placements.
  try {
    return await chainAndDispatch(deps, { order, name, pkg, workload, decision, summary, gate, policy, extras });
  } finally {
    held?.release();
  }
}

/** §9.2 steps 6–10 for a decision the engine made: chained and committed before anything is sent, then dispatched. */
async function chainAndDispatch(
  deps: DispatchDeps,
  d: {
    readonly order: PlaceOrder;
    readonly name: string;
    readonly pkg: PreparedPackage;
    readonly workload: WorkloadRecord;
    readonly decision: PlacementDecision;
    readonly summary: GateSummary;
    readonly gate: JsonObject;
    readonly policy: ControllerPolicy;
    readonly extras: PlaceExtras;
  },
): Promise<PlaceReport> {
  const { order, name, pkg, workload, decision, summary, gate, policy, extras } = d;
  // 6. chain the decision; no request is sent before this commits
  const dispatching = !order.dry_run && decision.placement !== null;
  let decisionId: DecisionId;
  // Issue 35: the candidate reports go beside the chain (one per node would pass the 1 MiB payload limit at scale).
  const candidates = candidatesDocumentOf(decision.candidates);
  const moves = deps.moves;
  /** The id of a dispatching decision, known inside its transaction: set, it may have committed even if the call threw. */
  let maybeCommitted: DecisionId | null = null;
  try {
    decisionId = await deps.store.commitDecision({
      summary,
      candidates,
      name,
      packageId: pkg.packageId,
      workload,
      dispatch: dispatching,
      event: {
        source: "placement",
        kind: "workload.place",
        payload: {
          phase: "decision",
          backend: "mesh",
          controller: deps.controllerId,
          owner: deps.store.ownerRecord(),
          dry_run: order.dry_run,
          name,
          package_id: pkg.packageId,
          order: orderRecord(order, pkg.packageId, name),
          decision: decisionWithoutCandidates(decision),
          candidates: candidates.ref as unknown as JsonObject,
          gate,
        },
      },
      refusal: (error) => ({
        source: "placement",
        kind: "workload.refuse",
        payload: { phase: "decision", name, package: pkg.packageId, error, constraints: [], gate },
      }),
      // Issue 16: what a reschedule reruns, kept with the decision, before anything is sent (no secret value:
      // stored-order.ts); in its transaction, one commit fewer per placement (issue 19).
      withDispatching: async (tx, id) => {
        maybeCommitted = id;
        await moves?.saveOrderIn(tx, id, storedOrderOf(order, pkg.packageId, name, extras.agentSpec ?? null));
      },
    });
  } catch (error) {
    if (error instanceof NameTaken) throw new PlaceError("name_taken", error.message, [], error.holder);
    // A commit whose answer was lost (the store died inside COMMIT) may have left the decision `dispatching` under
    // this live owner with nothing sent: hand it over (unplaced), as a failed dispatch is below.
    if (maybeCommitted === null) throw error;
    const handedOver = await handOver(deps, maybeCommitted, null, error);
    throw isStoreAway(error) ? handedOver : error;
  }
  // 7. dry run or nothing fits
  if (!dispatching) {
    return {
      decision,
      decision_id: decisionId,
      explain: renderExplain(decision, { decision_id: decisionId }),
      attempts: [],
      placed: null,
      unsettled: false,
    };
  }
  // 8–9. dispatch
  await deps.hooks.afterDecision?.(decisionId);
  const sent: InFlight = { attempt: null };
  let result: Awaited<ReturnType<typeof dispatch>>;
  try {
    result = await dispatch(deps, { order, name, pkg, workload, decision, decisionId, policy }, sent);
  } catch (error) {
    // A hook's throw stands for this process dying at that point (crash tests, §18.3): nothing is handed over, and
    // recovery by owner liveness (§14.2) finds the decision once the owner is gone.
    if (error instanceof DiedAtHook) throw error.cause;
    // Issue 37, seed 8206 of the network world: any other failure — the store away, or an error nobody classified —
    // hands the decision over while this process lives. Left `dispatching`, it held its name for as long as this
    // process renewed its owner lease: no settle listed it and every later deploy of the name was refused.
    const handedOver = await handOver(deps, decisionId, sent.attempt, error);
    throw isStoreAway(error) ? handedOver : error;
  }
  // 10. explain
  return {
    decision,
    decision_id: decisionId,
    explain: renderExplain(decision, { decision_id: decisionId, attempts: result.attempts as ExplainAttempt[] }),
    ...result,
  };
}

async function runEngine(
  deps: DispatchDeps,
  order: PlaceOrder,
  name: string,
  pkg: PreparedPackage,
  views: Awaited<ReturnType<Targets["views"]>>,
  verdicts: Record<string, { verdict: "permit" | "deny"; reason: string }>,
  summary: GateSummary,
  policy: ControllerPolicy,
  cordoned: readonly string[],
): Promise<{ decision: PlacementDecision; held: HeldPlacement | null }> {
  const revoked = policy.revocations?.subjects ?? [];
  // Issue 19: only the spec (built from the package just verified), the order's options and the cluster's marks are
  // parsed per decision; the views, weights, verdicts and history were validated where they entered (ValidatedParts).
  const parsed = parsePlacementInputWithParts(
    {
      request: {
        spec: workloadSpecOf(name, pkg),
        pin: order.pin,
        prefer: order.prefer,
        avoid: order.avoid,
        allow_emulated: order.allow_emulated,
        strategy: order.strategy,
        current_node: null,
      },
      cluster: {
        now_ms: deps.clock(),
        revoked_nodes: revoked.filter((s) => s.kind === "node").map((s) => s.id),
        revoked_refs: revoked.filter((s) => s.kind !== "node").map((s) => s.id),
        cordoned_nodes: [...cordoned],
      },
    },
    { nodes: views, weights: deps.weights, gate: verdicts, instances: [], placed: [] },
  );
  // The history this decision reads: every node's totals, and only the instances its constraints name (history.ts), with
  // what this process is dispatching added (issue 35). The placements in flight are read after the last await and the
  // winner held before the next, so two decisions of this process never both miss each other.
  if (!parsed.ok) return refuseDecision(deps, name, pkg, summary, parsed.error);
  const reads = historyReads(parsed.value.request, parsed.value.nodes);
  const history = await deps.store.placementHistory(reads);
  const result = decide({
    ...parsed.value,
    cluster: { ...parsed.value.cluster, ...withInFlight(history, deps.inFlight?.list() ?? [], reads) },
  });
  if (!result.ok) return refuseDecision(deps, name, pkg, summary, result.error);
  const winner = order.dry_run ? null : result.value.placement;
  const held =
    winner === null || deps.inFlight === undefined
      ? null
      : deps.inFlight.hold(
          instanceOf({ node_id: winner.node_id, name, placed_ms: deps.clock() }, workloadRecordOf(pkg)),
        );
  return { decision: result.value, held };
}

/** The engine's refusal (no decision could be made), chained with the gate summary, then thrown as `decision`. */
async function refuseDecision(
  deps: DispatchDeps,
  name: string,
  pkg: PreparedPackage,
  summary: GateSummary,
  error: { readonly message: string; readonly constraints: ReadonlyArray<{ constraint: string; detail: string }> },
): Promise<never> {
  const constraints = error.constraints.map((c) => ({ constraint: c.constraint, detail: c.detail }));
  const gate = summary.ref as unknown as JsonObject;
  await deps.store.appendWithSummary(summary, [
    {
      source: "placement",
      kind: "workload.refuse",
      payload: { phase: "decision", name, package: pkg.packageId, error: error.message, constraints, gate },
    },
  ]);
  throw new PlaceError("decision", error.message, constraints);
}

/** The order as chained: env names only (values may be sensitive), plus a digest of the whole config. */
function orderRecord(order: PlaceOrder, packageId: string, name: string): JsonObject {
  return {
    package_id: packageId,
    name,
    config: { mode: order.config.mode, args: [...order.config.args], env: Object.keys(order.config.env).sort() },
    config_sha256: sha256(canonicalJson(order.config)).toString("hex"),
    pin: order.pin,
    prefer: [...order.prefer],
    avoid: [...order.avoid],
    allow_emulated: order.allow_emulated,
    start: order.start,
    restart: order.restart,
    ...(order.agent !== null ? { agent: order.agent, intent: order.intent } : {}),
  };
}

interface DispatchInput {
  readonly order: PlaceOrder;
  readonly name: string;
  readonly pkg: PreparedPackage;
  readonly workload: WorkloadRecord;
  readonly decision: PlacementDecision;
  readonly decisionId: DecisionId;
  readonly policy: ControllerPolicy;
}

/** What a crash test's hook threw: the process "died" there, so the decision is left to recovery, not handed over. */
class DiedAtHook extends Error {
  constructor(cause: unknown) {
    super("a crash test's hook threw", { cause });
  }
}

async function dieAtHook(hook: () => void | Promise<void>): Promise<void> {
  try {
    await hook();
  } catch (error) {
    throw new DiedAtHook(error);
  }
}

/** The attempt whose request may be out and whose outcome is not committed yet (what `handOver` must not lose). */
interface InFlight {
  attempt: { n: number; node_id: string; variant: string } | null;
}

/** How long a place waits for the store to take the hand-over before answering; then it goes on in the background. */
const HANDOVER_WAIT_MS = 20_000;
const HANDOVER_GIVE_UP_MS = 600_000;

/**
 * Issue 37 finding A: the store failed in the middle of a dispatch (PostgreSQL restarted inside the commit of a
 * node's answer). The outcome of the attempt in flight is unknown to the controller, so the decision goes where a
 * lost answer goes (`handOverInterrupted`): unsettled on that node (settle adopts what it holds, or releases the
 * name), or unplaced when nothing was sent. Never a second candidate: one copy at most. Retried while the store is
 * down (it comes back after a restart); the place answers `store_interrupted` (retryable) either way, saying which.
 */
async function handOver(
  deps: DispatchDeps,
  decisionId: DecisionId,
  attempt: InFlight["attempt"],
  cause: unknown,
): Promise<PlaceError> {
  const why = `the controller store failed while this decision was dispatched (${truncate((cause as Error)?.message ?? String(cause))})`;
  const reason = `${why}; the node's answer, if any, was not recorded`;
  const started = deps.clock();
  let waitMs = 250;
  const tryOnce = async (): Promise<string | null> => {
    try {
      return await deps.store.handOverInterrupted(decisionId, attempt, reason);
    } catch {
      return null;
    }
  };
  let state = await tryOnce();
  while (state === null && deps.clock() - started < HANDOVER_WAIT_MS) {
    await new Promise((r) => setTimeout(r, waitMs));
    waitMs = Math.min(waitMs * 2, 2_000);
    state = await tryOnce();
  }
  if (state === null) {
    // The store is still down: keep trying in the background, so the decision does not stay dispatching while this
    // process lives (if it dies first, recovery finds its request `sending` and makes it unsettled the same way).
    void (async () => {
      while (state === null && deps.clock() - started < HANDOVER_GIVE_UP_MS) {
        await new Promise((r) => setTimeout(r, 2_000));
        state = await tryOnce();
      }
    })();
  }
  const next =
    state === "unsettled"
      ? "the decision is unsettled: `berth unsettled --settle`, or the next place or deploy, asks the node and adopts the instance or releases the name"
      : state === "placed"
        ? "the decision was recorded placed after all"
        : state === "absent"
          ? "nothing of it was recorded"
          : state === null
            ? "the store is still unreachable; the decision is handed to settle as soon as it answers"
            : `the decision is ${state}`;
  return new PlaceError("store_interrupted", `decision ${decisionId.slice(0, 12)}: ${why}; ${next}; try again`);
}

function truncate(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

async function dispatch(
  deps: DispatchDeps,
  d: DispatchInput,
  sent: InFlight,
): Promise<{ attempts: Attempt[]; placed: PlacementRecord | null; unsettled: boolean }> {
  const { store, targets } = deps;
  const candidates = dispatchOrder(d.decision);
  const method = d.order.start ? "place" : "load";
  const body: JsonObject = {
    package_id: d.pkg.packageId,
    name: d.name,
    variant: "",
    config: d.order.config as unknown as JsonObject,
    ...(d.order.agent !== null ? { agent: d.order.agent, intent: d.order.intent } : {}),
    // Issue 15: `never` is the node's default, so an order that asks nothing extra reads the same to an older node.
    ...(d.order.restart !== "never" ? { restart: d.order.restart } : {}),
  };
  const attempts: Attempt[] = [];
  const refuseEvent = (a: Attempt, extra: { reconcile: string | null; unloaded: number | null }): EventDraft => ({
    source: "placement",
    kind: "workload.refuse",
    payload: {
      phase: "dispatch",
      decision_id: d.decisionId,
      node: a.node_id,
      variant: a.variant,
      outcome: a.outcome,
      code: a.code,
      reason: a.reason,
      reconcile: extra.reconcile,
      unloaded: extra.unloaded,
      next: a.next,
    },
  });
  const exhausted = (n: number): EventDraft => ({
    source: "placement",
    kind: "workload.refuse",
    payload: { phase: "exhausted", decision_id: d.decisionId, attempts: n },
  });

  for (const [i, cand] of candidates.entries()) {
    // Every earlier attempt's outcome committed before the loop went on: none is in flight.
    sent.attempt = null;
    const n = i + 1;
    const last = i === candidates.length - 1;
    const record = async (
      given: Attempt,
      extra: { reconcile: string | null; unloaded: number | null } = { reconcile: null, unloaded: null },
    ) => {
      const a = last && given.next === NEXT_CANDIDATE ? { ...given, next: NO_CANDIDATE_LEFT } : given;
      attempts.push(a);
      await store.commitAttempt(
        d.decisionId,
        n,
        { nodeId: a.node_id, variant: a.variant, outcome: a.outcome, code: a.code, reason: a.reason },
        refuseEvent(a, extra),
        last ? { state: "unplaced", exhausted: exhausted(n) } : null,
      );
    };
    // §9.4 step 1: an emulated route is gated again with `emulated: true` before anything is sent.
    if (cand.route === "emulated") {
      const { verdict, event } = consult(
        "workload.place",
        contextOf(d.workload, targets.tierOfNode(cand.node_id), deps.controllerId, true),
        gatePolicyOf(d.policy, deps.gate),
        cand.node_id,
      );
      if (event) await store.appendAll([event]);
      if (verdict.decision !== "permit") {
        await record({
          node_id: cand.node_id,
          variant: cand.variant,
          outcome: "gate_denied",
          code: null,
          reason: verdict.reason,
          next: NEXT_CANDIDATE,
          instance_id: null,
        });
        continue;
      }
    }
    // 2. recorded before the connection opens
    sent.attempt = { n, node_id: cand.node_id, variant: cand.variant };
    await store.beginAttempt(d.decisionId, n, cand.node_id, cand.variant);
    await dieAtHook(() => deps.hooks.afterAttemptBegun?.(d.decisionId, cand.node_id));
    // 3–4. send (the stale_boot resend happens inside `call`)
    const r = await targets.call(
      cand.node_id,
      method,
      { ...body, variant: cand.variant },
      { decisionId: d.decisionId, package: d.pkg.source, timeoutMs: deps.timeouts.placeMs },
    );
    const outcome = outcomeOf(method, r);
    // 5. by outcome
    if (outcome === "placed" && r.kind === "ok") {
      const instanceId = r.result.instance_id;
      const placement: PlacementRecord = {
        instance_id: instanceId,
        name: d.name,
        node_id: cand.node_id,
        decision_id: d.decisionId,
        variant: cand.variant,
        route: r.result.route,
        package_id: d.pkg.packageId,
        placed_ms: deps.clock(),
        adopted: false,
        pending: null,
      };
      await store.commitPlaced(d.decisionId, n, placement, d.workload, {
        source: "placement",
        kind: "workload.place",
        payload: {
          phase: "placed",
          decision_id: d.decisionId,
          node: cand.node_id,
          variant: cand.variant,
          route: placement.route,
          instance_id: instanceId,
          attempts: n,
          target_result: r.result,
        },
      });
      attempts.push({
        node_id: cand.node_id,
        variant: cand.variant,
        outcome: "placed",
        code: null,
        reason: null,
        next: null,
        instance_id: instanceId,
      });
      return { attempts, placed: placement, unsettled: false };
    }
    if (outcome === "refused" || outcome === "unreachable" || outcome === "ok") {
      const code = r.kind === "refused" ? r.code : null;
      const reason =
        r.kind === "ok" ? "the node answered without placing" : failureText(r as Exclude<typeof r, { kind: "ok" }>);
      await record({
        node_id: cand.node_id,
        variant: cand.variant,
        outcome: outcome === "ok" ? "refused" : outcome,
        code,
        reason: r.kind === "refused" ? r.reason : reason,
        next: NEXT_CANDIDATE,
        instance_id: null,
      });
      continue;
    }
    // indeterminate: reconcile with this node before anything else (§10.1)
    const why = r.kind === "no_answer" ? r.reason : "no valid answer";
    // From here until the attempt commits, the decision is `reconciling`: nobody else may settle or adopt it.
    await store.beginReconcile(d.decisionId);
    const rec = await reconcileLostAnswer(targets, cand.node_id, d.decisionId, deps.timeouts.callMs);
    const reason = `${why}; ${rec.note}`;
    if (rec.settled) {
      await record(
        {
          node_id: cand.node_id,
          variant: cand.variant,
          outcome: "indeterminate",
          code: null,
          reason,
          next: NEXT_CANDIDATE,
          instance_id: null,
        },
        { reconcile: rec.note, unloaded: rec.unloaded },
      );
      continue;
    }
    const a: Attempt = {
      node_id: cand.node_id,
      variant: cand.variant,
      outcome: "indeterminate",
      code: null,
      reason,
      next: STOPPED,
      instance_id: null,
    };
    attempts.push(a);
    await store.commitAttempt(
      d.decisionId,
      n,
      { nodeId: a.node_id, variant: a.variant, outcome: a.outcome, code: null, reason },
      refuseEvent(a, { reconcile: rec.note, unloaded: rec.unloaded }),
      { state: "unsettled", node_id: cand.node_id, variant: cand.variant },
    );
    return { attempts, placed: null, unsettled: true };
  }
  return { attempts, placed: null, unsettled: false };
}
