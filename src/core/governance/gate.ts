/**
 * The governance gate (spec/mesh.md §7): a pure verdict for one action on one workload context.
 *
 * Structural rules:
 * - default deny lives here in code (BERTH-DEFAULT-DENY), not in a rule a file could lose;
 * - the effect vector is derived here from typed fields; a caller never supplies it (extra members are dropped);
 * - the ceiling uses exact integer arithmetic in thousandths (Σ c² > T², strictly), so a verdict hashed into the
 *   audit chain is the same on every platform;
 * - teardown (stop, unload) is never blocked by tier, revocation or the ceiling; what was waived is recorded;
 * - defer counts as deny on every path in this version.
 */
import type { JsonObject } from "../crypto/canonical.js";
import { TIERS, type Tier } from "../identity/tier.js";
import {
  GOVERNED_ACTIONS,
  NETWORKS,
  type Network,
  type PackageTrustLevel,
  type PermitRule,
  REF_CARRYING_ACTIONS,
  type RevocationList,
  TEARDOWN_ACTIONS,
  TRUST_LEVELS,
} from "./policy.js";

export interface WorkloadContext {
  readonly kind: string;
  readonly package_trust: PackageTrustLevel;
  readonly node_tier: Tier;
  readonly network: Network;
  readonly secrets: boolean;
  readonly emulated: boolean;
  readonly accelerator: string | null;
  readonly cpu_millis: number;
  readonly refs: {
    readonly package_id: string | null;
    readonly signer_keys: readonly string[];
    readonly file_hashes: readonly string[];
  };
  /** The acting principal: the controller id on the controller, the requester id on a node. */
  readonly agent: string;
  /**
   * Issue 33: what the package declared when the runtime judges it otherwise (a node feeds `network` the exposure it
   * really gives, §13.1). Only explains a refusal; never an input to a verdict.
   */
  readonly network_declared?: Network;
}

export interface GatePolicy {
  readonly permits: readonly PermitRule[];
  /** `null`: the revocation list could not be read (fail closed for everything but teardown). */
  readonly revocations: RevocationList | null;
  readonly thresholdMilli: number;
  readonly builtinTeardown: boolean;
  readonly humanApproval: boolean;
  /** Issue 33: why the permits file loaded no rule (invalid, naming the field); said in a default deny. */
  readonly permitsError?: string | null;
}

/** §7.1: the ceiling `T` of the effect vector, in thousandths, unless the operator sets another (node.json, serve). */
export const DEFAULT_THRESHOLD_MILLI = 950;

export interface EffectVector {
  readonly risk: number;
  readonly fairness: number;
  readonly privacy: number;
  readonly novelty: number;
  readonly security: number;
}

export type GateDecision = "permit" | "deny" | "defer";

export interface GateVerdict {
  readonly decision: GateDecision;
  readonly reason: string;
  readonly action: string;
  /** false only for step 1 (an action outside `workload.`): not chained. */
  readonly chain: boolean;
  readonly chainKind: string;
  /** The §7.7 payload; integers only. */
  readonly payload: JsonObject;
}

const clamp = (n: number) => Math.max(0, Math.min(1000, n));

export function resourceCostMilli(cpuMillis: number): number {
  return cpuMillis <= 0 ? 250 : Math.min(1000, Math.ceil(cpuMillis / 4));
}

/** §7.1: the effect vector, from typed fields only. */
export function effectOf(
  ctx: Pick<
    WorkloadContext,
    "package_trust" | "node_tier" | "network" | "secrets" | "emulated" | "accelerator" | "cpu_millis"
  >,
): EffectVector {
  const trustRisk = { unsigned: 900, signed_unpinned: 600, pinned_signer: 100 }[ctx.package_trust];
  const tierSecurity = { discovered: 800, paired: 300, pinned: 100 }[ctx.node_tier];
  const networkSecurity = { none: 0, lan: 100, egress: 300 }[ctx.network];
  return {
    risk: clamp(trustRisk + (ctx.emulated ? 100 : 0)),
    fairness: clamp(resourceCostMilli(ctx.cpu_millis)),
    privacy: clamp((ctx.secrets ? 500 : 0) + (ctx.network === "egress" ? 200 : 0)),
    novelty: clamp((ctx.emulated ? 400 : 0) + (ctx.accelerator !== null ? 200 : 0)),
    security: clamp(tierSecurity + networkSecurity),
  };
}

export function sumOfSquares(e: EffectVector): number {
  return e.risk ** 2 + e.fairness ** 2 + e.privacy ** 2 + e.novelty ** 2 + e.security ** 2;
}

/** Reported score in thousandths: round(sqrt(Σ c²)), i.e. the score to three decimals × 1000. */
export function scoreMilli(e: EffectVector): number {
  return Math.round(Math.sqrt(sumOfSquares(e)));
}

export function ceilingExceeded(e: EffectVector, thresholdMilli: number): boolean {
  return sumOfSquares(e) > thresholdMilli * thresholdMilli;
}

const rank = <T extends string>(order: readonly T[], v: T) => order.indexOf(v);

function actionMatches(pattern: string, action: string): boolean {
  return pattern.endsWith("*") ? action.startsWith(pattern.slice(0, -1)) : pattern === action;
}

function acceleratorMatches(selector: string, accelerator: string): boolean {
  return selector.endsWith("*") ? accelerator.startsWith(selector.slice(0, -1)) : selector === accelerator;
}

/** The field of a permit rule that did not match, and why, in words a person can act on (issue 33). */
export interface PermitMismatch {
  readonly field:
    | "actions"
    | "kinds"
    | "controllers"
    | "min_package_trust"
    | "min_node_tier"
    | "max_network"
    | "allow_secrets"
    | "allow_emulated"
    | "accelerators"
    | "max_resource_cost_milli";
  readonly detail: string;
}

/** Why a permit does not match, or null when it does. Teardown matches on actions, kinds and controllers only. */
export function permitMismatch(
  rule: PermitRule,
  action: string,
  ctx: WorkloadContext,
  teardown: boolean,
): PermitMismatch | null {
  if (!rule.actions.some((a) => actionMatches(a, action)))
    return { field: "actions", detail: `${action} is not among ${rule.actions.join(", ")}` };
  if (!rule.kinds.includes("*") && !rule.kinds.includes(ctx.kind))
    return { field: "kinds", detail: `kind ${ctx.kind} is not among ${rule.kinds.join(", ")}` };
  if (rule.controllers.length > 0 && !rule.controllers.includes(ctx.agent))
    return { field: "controllers", detail: `controller ${ctx.agent} is not listed` };
  if (teardown) return null;
  if (rank(TRUST_LEVELS, ctx.package_trust) < rank(TRUST_LEVELS, rule.min_package_trust))
    return {
      field: "min_package_trust",
      detail: `the package is ${ctx.package_trust}, the rule needs ${rule.min_package_trust}`,
    };
  if (rank(TIERS, ctx.node_tier) < rank(TIERS, rule.min_node_tier))
    return {
      field: "min_node_tier",
      detail: `the node's tier is ${ctx.node_tier}, the rule needs ${rule.min_node_tier}`,
    };
  if (rank(NETWORKS, ctx.network) > rank(NETWORKS, rule.max_network))
    return { field: "max_network", detail: networkDetail(rule, ctx) };
  if (ctx.secrets && !rule.allow_secrets)
    return { field: "allow_secrets", detail: "the package declares secrets and the rule does not allow them" };
  if (ctx.emulated && !rule.allow_emulated)
    return { field: "allow_emulated", detail: "the route is emulated and the rule does not allow it" };
  if (ctx.accelerator !== null && !rule.accelerators.some((s) => acceleratorMatches(s, ctx.accelerator as string)))
    return {
      field: "accelerators",
      detail: `accelerator ${ctx.accelerator} matches none of [${rule.accelerators.join(", ")}]`,
    };
  const cost = resourceCostMilli(ctx.cpu_millis);
  if (cost > rule.max_resource_cost_milli)
    return {
      field: "max_resource_cost_milli",
      detail: `the workload costs ${cost}, the rule allows ${rule.max_resource_cost_milli}`,
    };
  return null;
}

/**
 * Issue 33: a package that declares `lan` (or `none` where no namespace can hold it) is judged `egress` on a node,
 * because a native process reaches whatever the host does; the rule's default `max_network` is `lan`. Say so.
 */
function networkDetail(rule: PermitRule, ctx: WorkloadContext): string {
  const base = `the workload is judged ${ctx.network}, the rule allows at most ${rule.max_network}`;
  if (ctx.network_declared === undefined || ctx.network_declared === ctx.network) return base;
  return `${base}: the package declares ${ctx.network_declared}, but this node runs it as a native process without a network namespace of its own, which reaches whatever the host does, so it is judged ${ctx.network}; raise the rule's max_network to ${ctx.network}, or declare network none on a node whose facts say network_none: enforced`;
}

/** The default deny's explanation: each rule that names this action and kind, and the field that refused it. */
function closestRules(rules: readonly PermitRule[], action: string, ctx: WorkloadContext, teardown: boolean): string {
  const near: string[] = [];
  for (const rule of rules) {
    const m = permitMismatch(rule, action, ctx, teardown);
    if (m === null || m.field === "actions" || m.field === "kinds") continue;
    near.push(`rule ${rule.id} did not match on ${m.field} (${m.detail})`);
  }
  if (near.length === 0) return "";
  const shown = near.slice(0, 3).join("; ");
  return `; ${shown}${near.length > 3 ? `; and ${near.length - 3} more` : ""}`;
}

const BUILTIN_TEARDOWN: PermitRule = {
  id: "BERTH-TEARDOWN",
  description: "built-in: stop and unload are always permitted for an authorised principal",
  actions: ["workload.stop", "workload.unload"],
  kinds: ["*"],
  controllers: [],
  min_package_trust: "unsigned",
  min_node_tier: "discovered",
  max_network: "egress",
  allow_secrets: true,
  allow_emulated: true,
  accelerators: ["*"],
  max_resource_cost_milli: 1000,
};

function validContext(ctx: WorkloadContext): string | null {
  if (!/^[a-z0-9_-]{1,64}$/.test(ctx.kind)) return "kind";
  if (!TRUST_LEVELS.includes(ctx.package_trust)) return "package_trust";
  if (!TIERS.includes(ctx.node_tier)) return "node_tier";
  if (!NETWORKS.includes(ctx.network)) return "network";
  if (!Number.isSafeInteger(ctx.cpu_millis) || ctx.cpu_millis < 0) return "cpu_millis";
  if (ctx.refs.signer_keys.length > 64 || ctx.refs.file_hashes.length > 64) return "refs";
  return null;
}

/**
 * Evaluates one action (§7.3). `node` names the node the verdict is about (the target on the controller, itself on a
 * node). Only the typed members of `input` are read, so a caller-supplied effect has no influence.
 */
export function evaluate(action: string, input: WorkloadContext, policy: GatePolicy, node: string): GateVerdict {
  // Copy the typed fields only: anything else the caller passed (an "effect", say) is dropped here.
  const ctx: WorkloadContext = {
    kind: input.kind,
    package_trust: input.package_trust,
    node_tier: input.node_tier,
    network: input.network,
    secrets: input.secrets,
    emulated: input.emulated,
    accelerator: input.accelerator,
    cpu_millis: input.cpu_millis,
    refs: {
      package_id: input.refs.package_id,
      signer_keys: [...input.refs.signer_keys],
      file_hashes: [...input.refs.file_hashes],
    },
    agent: input.agent,
    ...(input.network_declared === undefined ? {} : { network_declared: input.network_declared }),
  };
  const teardown = TEARDOWN_ACTIONS.has(action);
  const effective: WorkloadContext = teardown ? { ...ctx, node_tier: "pinned" } : ctx;
  const effect = effectOf(effective);
  const evaluated: string[] = [];
  const waived: string[] = teardown ? ["tier", "revocation", "ceiling"] : [];
  let revoked: JsonObject | null = null;
  let permitRule: string | null = null;

  const verdict = (decision: GateDecision, reason: string, kind = action, chain = true): GateVerdict => {
    const { refs, ...workload } = ctx;
    return {
      decision,
      reason,
      action,
      chain,
      chainKind: kind,
      payload: {
        decision,
        reason,
        agent: ctx.agent,
        action,
        node,
        workload: { ...workload, accelerator: workload.accelerator } as unknown as JsonObject,
        refs: { package_id: refs.package_id, signer_keys: [...refs.signer_keys], file_hashes: [...refs.file_hashes] },
        effect_milli: { ...effect },
        score_milli: scoreMilli(effect),
        threshold_milli: policy.thresholdMilli,
        threshold_exceeded: !teardown && ceilingExceeded(effect, policy.thresholdMilli),
        permit_rule: permitRule,
        evaluated_rules: evaluated,
        revoked,
        teardown_waived: waived,
      },
    };
  };

  // 1.
  if (!action.startsWith("workload."))
    return verdict("deny", `action '${action}' is not a workload action`, action, false);
  // 2.
  if (!(GOVERNED_ACTIONS as readonly string[]).includes(action)) {
    return verdict("deny", `action '${action}' is not a governed action`, "workload.refuse");
  }
  // 3.
  const invalid = validContext(ctx);
  if (invalid) return verdict("deny", `invalid workload context: ${invalid}`);
  // 4.
  if (!teardown) {
    if (policy.revocations === null) return verdict("deny", "revocation list unreadable (fail closed)");
    const refs = ctx.refs;
    if (
      REF_CARRYING_ACTIONS.has(action) &&
      refs.package_id === null &&
      refs.signer_keys.length === 0 &&
      refs.file_hashes.length === 0
    ) {
      return verdict("deny", `${action} names no package, signer or file (fail closed)`);
    }
    const subjects: Array<[string, string]> = [
      ...(refs.package_id !== null ? [["package", refs.package_id] as [string, string]] : []),
      ...refs.signer_keys.map((k) => ["signer", k] as [string, string]),
      ...refs.file_hashes.map((h) => ["file", h] as [string, string]),
    ];
    for (const [kind, id] of subjects) {
      const hit = policy.revocations.subjects.find((s) => s.kind === kind && s.id === id);
      if (hit) {
        revoked = { kind, id, reason: hit.reason };
        return verdict("deny", `${kind} '${id}' is revoked: ${hit.reason}`);
      }
    }
  }
  // 5.
  if (ctx.secrets && effective.node_tier !== "pinned")
    return verdict("deny", "workloads carrying secrets require a pinned node");
  // 6.
  const rules = policy.builtinTeardown ? [...policy.permits, BUILTIN_TEARDOWN] : [...policy.permits];
  for (const rule of rules) {
    evaluated.push(rule.id);
    if (permitMismatch(rule, action, effective, teardown) === null) {
      permitRule = rule.id;
      break;
    }
  }
  if (permitRule === null) {
    evaluated.push("BERTH-DEFAULT-DENY");
    // Issue 33: say why: the permits file that loaded nothing, or each rule for this action and kind with the field
    // that refused it (the verbatim prefix stays, spec §7.3).
    const why = policy.permitsError
      ? `; the permits file loads no rule: ${policy.permitsError}`
      : closestRules(policy.permits, action, effective, teardown);
    return verdict(
      "deny",
      `default deny: no permit rule matches '${action}' for kind '${ctx.kind}' (rule BERTH-DEFAULT-DENY)${why}`,
    );
  }
  // 7.
  if (!teardown && ceilingExceeded(effect, policy.thresholdMilli)) {
    evaluated.push("BERTH-EFFECT-CEILING");
    const text = `effect score ${(scoreMilli(effect) / 1000).toFixed(3)} exceeds threshold ${(policy.thresholdMilli / 1000).toFixed(3)} (rule BERTH-EFFECT-CEILING)`;
    return policy.humanApproval
      ? verdict("defer", `${text}; deferred to a human (refused on this path)`)
      : verdict("deny", text);
  }
  // 8.
  return verdict("permit", `permitted by rule ${permitRule}`);
}
