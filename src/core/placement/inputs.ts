/**
 * What the placement engine is given (spec/mesh.md §8.2): the request (workload spec, order options, weights, gate
 * verdicts), one view per candidate target (tier, liveness, facts as accepted by the controller), and the cluster
 * state (clock reading, revocations, instances already placed).
 *
 * The engine never trusts the shape of these: `placementInputSchema` is the one gate from `unknown` to a
 * `PlacementInput`, and everything past it may rely on the types. Defaults are applied here, once, so the stages
 * never branch on "absent".
 *
 * The facts schema is the engine's view of §6.1: it reads only the members a decision depends on and strips the
 * rest (boot id, seq, ttl, lease…), which the shell has already used to accept the facts (§6.2).
 */
import { z } from "zod";
import type { NodeId } from "../crypto/ed25519.js";
import { TIERS } from "../identity/tier.js";
import { ARCHES } from "../packages/arch.js";

// ---- vocabularies ----------------------------------------------------------------------------------------------

/** §8.2: computed by the controller from direct contact. */
export const LIVENESS = ["alive", "suspect", "dead", "unknown"] as const;
export type Liveness = (typeof LIVENESS)[number];

/** §6.3: how a capability is known, ordered `claimed < probed < measured`. */
export const PROVENANCES = ["claimed", "probed", "measured"] as const;
export type Provenance = (typeof PROVENANCES)[number];
export const PROVENANCE_RANK: Readonly<Record<Provenance, number>> = { claimed: 0, probed: 1, measured: 2 };

/** §6.1: the operating systems a node can report (its architectures: packages/arch.ts, §5.2). */
export const OSES = ["linux", "darwin"] as const;
export type Os = (typeof OSES)[number];

// ---- small field rules -----------------------------------------------------------------------------------------

const NODE_ID = /^[0-9a-f]{32}$/;
/** A node id as the shell derived it from the node's key (§3.1); the engine only copies it. */
export const nodeIdSchema = z.custom<NodeId>((v) => typeof v === "string" && NODE_ID.test(v), {
  message: "a node id is 32 lowercase hex characters",
});

const count = z.int().min(0);
const bytes = z.int().min(0);
const ms = z.int().min(0);
/** §6.3: dotted lowercase, ≤ 128 characters. */
const capabilityId = z
  .string()
  .max(128)
  .regex(/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/, "a capability id is dotted lowercase");
const board = z.string().regex(/^[a-z0-9-]{1,32}$/, "a board is 1…32 of [a-z0-9-]");
const labelKey = z.string().regex(/^[a-z0-9][a-z0-9./_-]{0,62}$/, "a label key is ^[a-z0-9][a-z0-9./_-]{0,62}$");
/** Order options name nodes by id; a string that names no node is not malformed, it is an unknown pin. */
const nodeRef = z.string().max(64);
const provenance = z.enum(PROVENANCES);

/** Capability attribute values (§6.3): integer, string, boolean or string array. */
export const attrValueSchema = z.union([
  z.int(),
  z.string().max(1024),
  z.boolean(),
  z.array(z.string().max(256)).max(64),
]);
export type AttrValue = z.infer<typeof attrValueSchema>;

export const capabilitySchema = z.object({
  id: capabilityId,
  attrs: z.record(z.string().max(64), attrValueSchema).default({}),
  provenance: provenance.default("claimed"),
});
export type Capability = z.infer<typeof capabilitySchema>;

// ---- requirements (§6.3) ---------------------------------------------------------------------------------------

export const PREDICATE_OPS = ["eq", "gte", "lte", "in", "has"] as const;

export const predicateSchema = z.object({
  attr: z.string().max(64),
  op: z.enum(PREDICATE_OPS),
  value: attrValueSchema,
});
export type Predicate = z.infer<typeof predicateSchema>;

export const requirementSchema = z
  .object({
    id: capabilityId.optional(),
    id_prefix: capabilityId.optional(),
    where: z.array(predicateSchema).max(32).default([]),
    count: z.int().min(1).max(64).default(1),
    min_provenance: provenance.default("claimed"),
  })
  .refine((r) => (r.id === undefined) !== (r.id_prefix === undefined), {
    message: "a requirement names exactly one of id and id_prefix",
  });
export type Requirement = z.infer<typeof requirementSchema>;

export const PLACEMENT_STRATEGIES = ["spread", "binpack"] as const;
export type PlacementStrategy = (typeof PLACEMENT_STRATEGIES)[number];

// ---- the workload (§5.1, §5.2, §8.2) ---------------------------------------------------------------------------

export const variantSchema = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "a variant id is ^[a-z0-9][a-z0-9_.-]{0,63}$"),
  arch: z.enum([...ARCHES, "any"]),
  os: z.enum([...OSES, "any"]),
  entry: z.object({ program: z.string().min(1).max(255), args: z.array(z.string()).max(64).default([]) }),
  requires: z.array(requirementSchema).max(64).default([]),
});
export type Variant = z.infer<typeof variantSchema>;

export const workloadSpecSchema = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "a workload name is ^[a-z0-9][a-z0-9-]{0,62}$"),
  kind: z.string().regex(/^[a-z0-9_-]{1,64}$/, "a kind is ^[a-z0-9_-]{1,64}$"),
  package_id: z.string().regex(/^[0-9a-f]{64}$/, "a package id is 64 lowercase hex characters"),
  variants: z
    .array(variantSchema)
    .min(1)
    .max(16)
    .refine((vs) => new Set(vs.map((v) => v.id)).size === vs.length, { message: "variant ids must be unique" }),
  requirements: z.array(requirementSchema).max(64).default([]),
  preferences: z
    .array(z.object({ requirement: requirementSchema, weight: z.int().min(1).max(1000) }))
    .max(16)
    .default([]),
  memory_bytes: bytes.default(0),
  uses_accelerator: z.boolean().default(false),
  policy: z
    .object({
      min_tier: z.enum(TIERS).default("paired"),
      labels: z.array(z.string().max(128)).max(64).default([]),
      excludes: z.array(z.string().max(128)).max(64).default([]),
      sticky: z.boolean().default(false),
    })
    .prefault({}),
  perf: z
    .object({ metric: z.string().min(1).max(128), direction: z.enum(["lower", "higher"]) })
    .nullable()
    .default(null),
  /** Everything a revocation may name for this workload: package id, pinned file hashes, signer keys. */
  refs: z.array(z.string().max(128)).max(2048).default([]),
});
export type WorkloadSpec = z.infer<typeof workloadSpecSchema>;

// ---- weights (§8.5) --------------------------------------------------------------------------------------------

/** Finite, ≥ 0, at most two decimals, so that ×100 is an exact integer (`_centi`). Capped to keep sums safe. */
const weight = z
  .number()
  .min(0)
  .max(1_000_000)
  .refine((w) => Math.abs(w * 100 - Math.round(w * 100)) < 1e-6, { message: "a weight has at most two decimals" });

export const scoringWeightsSchema = z.object({
  execution: z
    .object({ native: weight.default(100), fallback: weight.default(40), emulated: weight.default(20) })
    .prefault({}),
  accel_fit: weight.default(10),
  perf: weight.default(30),
  load: weight.default(10),
  /**
   * The load part that counts what is already placed on a node (its instances and their declared memory, issue 16):
   * full weight for the least-placed node under `spread`, for the most-placed under `binpack`.
   */
  placed: weight.default(10),
  /** Stickiness when `policy.sticky` is set. */
  sticky: weight.default(1000),
  /** Stickiness otherwise. */
  stickiness: weight.default(15),
  /** Boards whose native route is only a `fallback` execution tier (§8.4). */
  fallback_boards: z.array(board).max(64).default(["dev"]),
});
export type ScoringWeights = z.infer<typeof scoringWeightsSchema>;

export const DEFAULT_WEIGHTS: ScoringWeights = Object.freeze(scoringWeightsSchema.parse({})) as ScoringWeights;

// ---- node facts as the engine sees them (§6.1) -----------------------------------------------------------------

const archSchema = z.enum(ARCHES);

export const routeSchema = z.discriminatedUnion("route", [
  z.object({ route: z.literal("native"), arches: z.array(archSchema).max(8) }),
  z.object({
    route: z.literal("emulated"),
    via: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, "an emulator name is ^[a-z0-9][a-z0-9_-]{0,31}$"),
    arches: z.array(archSchema).max(8),
    provenance: provenance.default("claimed"),
  }),
]);
export type NodeRoute = z.infer<typeof routeSchema>;

export const nodeFactsSchema = z.object({
  node_id: nodeIdSchema,
  issued_at_ms: ms,
  name: z.string().max(64),
  os: z.enum(OSES),
  arch: archSchema,
  board,
  cpu: z.object({
    count: count,
    model: z.string().max(256).default(""),
    /** `null` when the node could not read its load: the load component is then 0 and flagged `load_unknown`. */
    load1_milli: count.nullable().default(null),
  }),
  memory: z.object({ total_bytes: bytes, available_bytes: bytes }),
  accelerators: z
    .array(
      z.object({
        id: capabilityId,
        mem_bytes: bytes,
        count: count.default(1),
        provenance: provenance.default("claimed"),
      }),
    )
    .max(16)
    .default([]),
  routes: z.array(routeSchema).max(16).default([]),
  interpreters: z
    .array(
      z.object({
        name: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,31}$/),
        version: z.string().max(64),
        provenance: provenance.default("claimed"),
      }),
    )
    .max(32)
    .default([]),
  labels: z.record(labelKey, z.string().max(256)).default({}),
  perf: z
    .array(
      z.object({
        metric: z.string().min(1).max(128),
        subject: z.string().max(128).default(""),
        value_milli: count,
        direction: z.enum(["lower", "higher"]),
        measured_at_ms: ms,
        /** §6.1 lists no provenance for perf; an entry carrying `measured_at_ms` is taken as measured unless said otherwise. */
        provenance: provenance.default("measured"),
      }),
    )
    .max(64)
    .default([]),
  capabilities: z.array(capabilitySchema).max(512).default([]),
});
export type NodeFacts = z.infer<typeof nodeFactsSchema>;

// ---- the three inputs (§8.2) -----------------------------------------------------------------------------------

export const nodeViewSchema = z.object({
  node_id: nodeIdSchema,
  tier: z.enum(TIERS),
  liveness: z.enum(LIVENESS),
  facts: nodeFactsSchema.nullable(),
  facts_expire_at_ms: ms,
});
export type NodeView = z.infer<typeof nodeViewSchema>;

/**
 * The gate's `workload.place` answer on one node as the engine reads it (§9.2 step 4): only permit or deny and why.
 * Not the gate's own `GateVerdict` (core/governance/gate.ts), which the shell reduced to this.
 */
export const placeVerdictSchema = z.object({ verdict: z.enum(["permit", "deny"]), reason: z.string().max(2048) });
export type PlaceVerdict = z.infer<typeof placeVerdictSchema>;

export const placementRequestSchema = z.object({
  spec: workloadSpecSchema,
  pin: nodeRef.nullable().default(null),
  prefer: z.array(nodeRef).max(16).default([]),
  avoid: z.array(nodeRef).max(16).default([]),
  allow_emulated: z.boolean().default(false),
  /** Where the load dimension leans (Nomad's scheduler algorithm): `spread` shares equal nodes, `binpack` fills one first. */
  strategy: z.enum(PLACEMENT_STRATEGIES).default("spread"),
  /** Rescheduling only (§15): the node the workload runs on now, for stickiness. */
  current_node: nodeRef.nullable().default(null),
  weights: scoringWeightsSchema.prefault({}),
  /** `workload.place` verdicts per node id, computed by the shell before the engine runs (§9.2 step 4). */
  gate: z.record(z.string().max(64), placeVerdictSchema).default({}),
});
export type PlacementRequest = z.infer<typeof placementRequestSchema>;

export const clusterInstanceSchema = z.object({
  node_id: z.string().max(64),
  name: z.string().max(128),
  labels: z.array(z.string().max(128)).max(64).default([]),
  /** §8.3 `co_residency` checks both directions, so an instance also carries the labels its workload excludes. */
  excludes: z.array(z.string().max(128)).max(64).default([]),
  memory_bytes: bytes.default(0),
  placed_at_ms: ms,
});
export type ClusterInstance = z.infer<typeof clusterInstanceSchema>;

/** Issue 19: what is placed on one node, every instance counted (history.ts). */
export const placedTotalSchema = z.object({ node_id: z.string().max(64), count, memory_bytes: bytes });
export type PlacedTotal = z.infer<typeof placedTotalSchema>;

export const clusterStateSchema = z.object({
  now_ms: ms,
  revoked_nodes: z.array(z.string().max(64)).default([]),
  revoked_refs: z.array(z.string().max(128)).default([]),
  /** Issue 16: nodes the operator cordoned (`berth node cordon`, `drain`, `forget`): no new placement lands there. */
  cordoned_nodes: z.array(z.string().max(64)).default([]),
  instances: z.array(clusterInstanceSchema).default([]),
  /**
   * Issue 19 (history.ts): the instance count and declared memory per node over everything placed. When present the
   * load dimension reads these totals, and `instances` need list only the instances `historyReads` selects (the ones
   * a constraint names one by one); when null, both come from `instances`, which must then be the full list.
   */
  placed: z.array(placedTotalSchema).max(100_000).nullable().default(null),
});
export type ClusterState = z.infer<typeof clusterStateSchema>;

export const placementInputSchema = z.object({
  request: placementRequestSchema,
  nodes: z.array(nodeViewSchema).max(100_000),
  cluster: clusterStateSchema,
});
/** Everything one decision depends on, after validation and defaults. */
export type PlacementInput = z.infer<typeof placementInputSchema>;
/** What a caller may write before defaults are applied (optional members may be left out). */
export type PlacementInputDraft = z.input<typeof placementInputSchema>;
