/**
 * Where the controller consults its own gate (spec/mesh.md §7.6): `workload.place` for every target in the view (the
 * verdict becomes the engine's `gate` constraint), again with `emulated: true` before sending to an emulated route,
 * and the instance verbs before anything is sent. Every verdict from step 2 on is chained (§7.7); those of the
 * consult over the view are chained once per distinct verdict (`viewVerdictEvents`, issue 19), so one placement over
 * N targets writes one verdict event per distinct verdict (typically one per tier in use) before its decision event,
 * not N signed events.
 */
import type { EventDraft } from "../../core/chain/event.js";
import { DEFAULT_THRESHOLD_MILLI, evaluate, type GatePolicy, type GateVerdict, type WorkloadContext } from "../../core/governance/gate.js";
import type { Tier } from "../../core/identity/tier.js";
import type { ControllerPolicy } from "./policy.js";
import type { WorkloadRecord } from "./store.js";

export interface GateSettings {
  readonly thresholdMilli: number;
  readonly builtinTeardown: boolean;
  readonly humanApproval: boolean;
}

export const DEFAULT_GATE: GateSettings = { thresholdMilli: DEFAULT_THRESHOLD_MILLI, builtinTeardown: true, humanApproval: false };

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
export function consult(action: string, ctx: WorkloadContext, policy: GatePolicy, node: string): { verdict: GateVerdict; event: EventDraft | null } {
  const verdict = evaluate(action, ctx, policy, node);
  return { verdict, event: verdict.chain ? { source: "gate", kind: verdict.chainKind, payload: verdict.payload } : null };
}

/**
 * §7.7 (issue 19): the verdicts of one consult over the view, one event per distinct verdict. Targets whose verdict
 * payloads are equal but for `node` share one event naming them all in `nodes` (sorted) instead of `node`; payloads
 * that differ in anything else (tier, decision, reason, rule) stay apart. Every consulted target is named by exactly
 * one event, in the order the view first shows its verdict. Equality is of the payloads as the gate built them, so a
 * false "different" can only mean one event more, never two verdicts merged.
 */
export function viewVerdictEvents(consulted: ReadonlyArray<{ readonly node: string; readonly event: EventDraft }>): EventDraft[] {
  const groups = new Map<string, { readonly event: EventDraft; readonly nodes: string[] }>();
  for (const { node, event } of consulted) {
    const { node: _named, ...verdict } = event.payload;
    const key = JSON.stringify([event.source, event.kind, verdict]);
    const group = groups.get(key);
    if (group) group.nodes.push(node);
    else groups.set(key, { event: { source: event.source, kind: event.kind, payload: verdict }, nodes: [node] });
  }
  return [...groups.values()].map(({ event, nodes }) => ({ ...event, payload: { ...event.payload, nodes: [...nodes].sort() } }));
}
