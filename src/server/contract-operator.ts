/**
 * The operator's routes (issue 13, "every verb through a context"): what `berth doctor`, `berth node rehome`,
 * `berth backup` and the audit verbs that go beyond reading (`verify` with a pinned key, checkpoints, `import`,
 * `checkpoint`) ask of a `berth serve`, so that a CLI on another machine gets the same answers as one on the
 * controller's files. Pure data, like contract.ts (which lists these routes after its own); the handlers are
 * routes/operator.ts and routes/audit-operator.ts.
 *
 * What stays off the API on purpose: `berth restore` (it replaces the databases of a stopped home, so the server
 * cannot be the one doing it) and `berth audit reseal` (it abandons the controller's chain: done on the controller
 * host, with its key file, never by whoever holds an API token).
 */
import { z } from "zod";
import type { RouteSpec } from "./route-spec.js";

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");
const Json = z.record(z.string(), z.unknown());
const ChainName = z.enum(["controller", "k8s"], { error: 'must be "controller" or "k8s"' });
const Head = z.strictObject({ seq: z.number().int().min(0), hash: Hex64 });

const SignedCheckpointSchema = z.strictObject({
  checkpoint: z.strictObject({
    chain_id: z.string().min(1).max(200),
    format: z.string().max(100),
    head_hash: Hex64,
    key: Hex64,
    seq: z.number().int().min(0),
    ts: z.number().int().min(0),
  }),
  sig: z.string().regex(/^[0-9a-f]{128}$/, "must be a 128-hex Ed25519 signature"),
});

const WedgedSchema = z.strictObject({
  decision_id: z.string(),
  name: z.string(),
  instance_id: z.string(),
  node_id: z.string(),
});

export const OperatorInputs = {
  rehome: z.strictObject({
    reason: z
      .string()
      .trim()
      .min(1, "must say why the node moves to this store")
      .refine((r) => Buffer.byteLength(r, "utf8") <= 1024, "must be at most 1024 bytes"),
  }),
  backup: z.strictObject({
    database: z
      .enum(["controller.db", "k8s.db"], { error: 'must be "controller.db" or "k8s.db"' })
      .default("controller.db"),
  }),
  verifyPinned: z.strictObject({
    chain: ChainName.default("controller"),
    key: Hex64.optional().meta({
      description:
        "the owner's public key to pin; without it the chain is checked against the key it names (self-asserted)",
    }),
    checkpoints: z
      .array(SignedCheckpointSchema)
      .max(10_000)
      .default([])
      .meta({ description: "signed checkpoints held elsewhere: each must match the chain" }),
    expect_head: Head.optional().meta({ description: "fail unless the chain has this hash at this seq" }),
  }),
  checkpointsQuery: z.strictObject({ chain: ChainName.default("controller") }),
  checkpoint: z.strictObject({}),
  importChain: z.strictObject({
    lines: z
      .string()
      .min(1)
      .meta({ description: "an exported chain: JSON lines, one sealed event per line (`berth audit export`)" }),
    key: Hex64.optional().meta({ description: "the owner's public key the chain must verify under" }),
  }),
} as const;

const VerifyResultSchema = z.looseObject({
  ok: z.boolean(),
  chain_id: z.string().nullable(),
  events: z.number(),
  head: z.strictObject({ seq: z.number(), hash: z.string() }).nullable(),
  checkpoints: z.number(),
  keySelfAsserted: z.boolean(),
  failure: Json.optional(),
});

const RehomeSchema = z
  .looseObject({
    kind: z.enum(["ok", "unknown_node", "refused", "unreachable", "indeterminate"]),
    node: z.string().optional(),
    reason: z.string().optional(),
    code: z.string().optional(),
  })
  .meta({
    description:
      "the controller's RehomeResult (mesh/controller/rehome.ts): ok with the store and epochs, or why not; every status carries it",
  });

const DoctorSchema = z.strictObject({
  repaired: z.boolean(),
  wedged: z.array(WedgedSchema),
  in_flight: z.array(
    z.strictObject({ decision_id: z.string(), name: z.string(), state: z.string(), owner: z.string() }),
  ),
});

export const OPERATOR_ROUTES: readonly RouteSpec[] = [
  {
    id: "doctor",
    method: "GET",
    path: "/doctor",
    tag: "operator",
    summary: "what `berth doctor` finds in the controller store (wedged decisions, decisions other processes hold)",
    status: 200,
    response: DoctorSchema,
  },
  {
    id: "doctorRepair",
    method: "POST",
    path: "/doctor/repair",
    tag: "operator",
    mutating: true,
    summary: "`berth doctor --repair`: mark each wedged decision placed, chained as controller.repair with the caller",
    body: z.strictObject({}),
    status: 200,
    response: DoctorSchema,
  },
  {
    id: "rehomeNode",
    method: "POST",
    path: "/nodes/{ref}/rehome",
    tag: "nodes",
    mutating: true,
    summary: "`berth node rehome`: make the node serve this controller key for this store (chained on both sides)",
    params: z.strictObject({ ref: z.string().min(1).max(300) }),
    body: OperatorInputs.rehome,
    status: 200,
    response: RehomeSchema,
    errors: [404, 409, 502],
  },
  {
    id: "backup",
    method: "POST",
    path: "/backup",
    tag: "operator",
    mutating: true,
    summary:
      "SQLite's online backup of one of the home's databases, answered whole (base64) with its events, chain head and SHA-256; chained as an api.call. 409 postgres_store: the controller's store is PostgreSQL, backed up with its own tools",
    body: OperatorInputs.backup,
    status: 200,
    response: z.strictObject({
      database: z.string(),
      home: z.string(),
      bytes: z.number(),
      events: z.number().nullable(),
      head: z.strictObject({ seq: z.number(), hash: z.string() }).nullable(),
      sha256: z.string(),
      base64: z.string(),
    }),
    errors: [404, 409],
  },
  {
    id: "auditVerifyPinned",
    method: "POST",
    path: "/audit/verify",
    tag: "audit",
    summary: "verify the stored chain under a pinned key, checkpoints held elsewhere and an expected head (reads only)",
    body: OperatorInputs.verifyPinned,
    status: 200,
    response: VerifyResultSchema,
    errors: [404],
  },
  {
    id: "auditCheckpoints",
    method: "GET",
    path: "/audit/checkpoints",
    tag: "audit",
    summary: "the chain's signed checkpoints, as `berth audit export --checkpoints` writes them",
    query: OperatorInputs.checkpointsQuery,
    status: 200,
    response: z.strictObject({ chain: ChainName, chain_id: z.string(), checkpoints: z.array(SignedCheckpointSchema) }),
    errors: [404],
  },
  {
    id: "auditCheckpoint",
    method: "POST",
    path: "/audit/checkpoint",
    tag: "audit",
    mutating: true,
    summary: "sign a checkpoint of the controller chain's head with the server's key (null when nothing is new)",
    body: OperatorInputs.checkpoint,
    status: 200,
    response: z.strictObject({ checkpoint: SignedCheckpointSchema.nullable() }),
  },
  {
    id: "auditImport",
    method: "POST",
    path: "/audit/import",
    tag: "audit",
    mutating: true,
    summary: "verify an exported chain and store it as a foreign copy in controller.db; writes nothing on any defect",
    body: OperatorInputs.importChain,
    status: 200,
    response: z.strictObject({ ok: z.literal(true), chain_id: z.string(), written: z.number() }),
    errors: [422],
  },
];
