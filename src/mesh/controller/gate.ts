/**
 * Where the controller consults its own gate (spec/mesh.md §7.6): `workload.place` for every target in the view (the
 * verdict becomes the engine's `gate` constraint), again with `emulated: true` before sending to an emulated route,
 * and the instance verbs before anything is sent. Every verdict from step 2 on is chained (§7.7); those of the
 * consult over the view are committed as one gate summary whose hash the decision event carries (`placeVerdicts`,
 * issue 35; before it, one event per distinct verdict, issue 19; before that, one per target), so a placement over N
 * targets adds a constant number of chain events.
 */
import type { EventDraft } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import {
  DEFAULT_THRESHOLD_MILLI,
  evaluate,
  type GatePolicy,
  type GateVerdict,
  type WorkloadContext,
} from "../../core/governance/gate.js";
import type { Tier } from "../../core/identity/tier.js";
import { type GateSummary, summariseVerdicts, verdictWithoutNode } from "../../core/governance/summary.js";
import type { ControllerPolicy } from "./policy.js";
import type { WorkloadRecord } from "./store.js";

export interface GateSettings {
  readonly thresholdMilli: number;
  readonly builtinTeardown: boolean;
  readonly humanApproval: boolean;
}

export const DEFAULT_GATE: GateSettings = {
  thresholdMilli: DEFAULT_THRESHOLD_MILLI,
  builtinTeardown: true,
  humanApproval: false,
};

export function gatePolicyOf(policy: ControllerPolicy, settings: GateSettings): GatePolicy {
  return {
    permits: policy.permits,
    permitsError: policy.permitsError ?? null,
    revocations: policy.revocations,
    thresholdMilli: settings.thresholdMilli,
    builtinTeardown: settings.builtinTeardown,
    humanApproval: settings.humanApproval,
  };
}

/** The typed context of §7.1, built from verified data only: the package verified on this controller. */
export function contextOf(w: WorkloadRecord, tier: Tier, agent: string, emulated: boolean): WorkloadContext {
  return {
    kind: w.kind,
    package_trust: "pinned_signer",
    node_tier: tier,
    network: w.network,
    secrets: w.secrets,
    emulated,
    accelerator: null,
    cpu_millis: w.cpu_millis,
    refs: { package_id: w.package_id, signer_keys: [...w.signer_keys], file_hashes: [...w.file_hashes] },
    agent,
  };
}

/** Evaluates one action and returns the verdict with the event to chain (none for step 1). */
export function consult(
  action: string,
  ctx: WorkloadContext,
  policy: GatePolicy,
  node: string,
): { verdict: GateVerdict; event: EventDraft | null } {
  const verdict = evaluate(action, ctx, policy, node);
  return {
    verdict,
    event: verdict.chain ? { source: "gate", kind: verdict.chainKind, payload: verdict.payload } : null,
  };
}

/** What the engine reads of one node's verdict (its `gate` constraint). */
export type EngineVerdict = { verdict: "permit" | "deny"; reason: string };

/**
 * §7.7 (issue 35): `workload.place` consulted for every target in the view, and the verdicts as one summary
 * (core/governance/summary.ts) whose hash the decision event carries: a constant number of chain events per placement
 * whatever the number of targets. The gate's verdict depends on the node only through its tier (the node is named in
 * the payload, nowhere else), so it is evaluated once per tier in the view and the same verdict object is shared by
 * the targets of that tier. A target behind the revocation list (`lag`, issue 33) is refused for the engine whatever
 * the gate said; the summary keeps the gate's own verdict, as the per-node events did.
 */
export function placeVerdicts(
  views: ReadonlyArray<{ readonly node_id: string; readonly tier: Tier }>,
  contextFor: (tier: Tier) => WorkloadContext,
  policy: GatePolicy,
  lag: ReadonlyMap<string, string>,
): { verdicts: Record<string, EngineVerdict>; summary: GateSummary } {
  const byTier = new Map<Tier, { verdict: GateVerdict; shared: JsonObject }>();
  const verdicts: Record<string, EngineVerdict> = {};
  const consulted: Array<{ node: string; verdict: JsonObject }> = [];
  for (const v of views) {
    let judged = byTier.get(v.tier);
    if (judged === undefined) {
      // Evaluated for the first node of this tier; its node is dropped from the shared verdict below.
      const verdict = evaluate("workload.place", contextFor(v.tier), policy, v.node_id);
      judged = { verdict, shared: verdictWithoutNode(verdict.payload) };
      byTier.set(v.tier, judged);
    }
    const behind = lag.get(v.node_id);
    verdicts[v.node_id] =
      behind !== undefined
        ? { verdict: "deny", reason: behind }
        : { verdict: judged.verdict.decision === "permit" ? "permit" : "deny", reason: judged.verdict.reason };
    if (judged.verdict.chain) consulted.push({ node: v.node_id, verdict: judged.shared });
  }
  return { verdicts, summary: summariseVerdicts("workload.place", consulted) };
}
