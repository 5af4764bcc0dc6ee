/**
 * The HTTP API contract (issue 8 §2): one zod schema per route input and output, and the route table the server
 * (About 1070 lines, one concept: the route table and its schemas, one entry per route; split by area it would hide a
 * route from the one list the server and the OpenAPI document are both made from.)
 * registers and the OpenAPI document is generated from — so the document cannot say one thing while the server does
 * another. Pure data: no handlers, no I/O. Response shapes mirror berth's library records field for field (snake_case
 * as they are); where a record is large and owned elsewhere (the engine's decision, an agent observation) the schema
 * names its key fields and lets the rest through.
 */
import { z } from "zod";
import { TIERS } from "../core/identity/tier.js";
import { PlaceOrderSchema } from "../mesh/controller/order.js";
import { OPERATOR_ROUTES } from "./contract-operator.js";
import { TLOG_ROUTES } from "./contract-tlog.js";
import type { RouteSpec } from "./route-spec.js";

export type { RouteSpec };

// ---- shared pieces --------------------------------------------------------------------------------------------------

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");
const NodeRef = z.string().min(1).max(300);
const Tier = z.enum(TIERS);
const Json = z.record(z.string(), z.unknown());

export const ErrorSchema = z.strictObject({
  error: z.strictObject({
    code: z.string().meta({
      description: "stable machine-readable code, e.g. unauthorized, invalid_request, not_found, k8s_not_configured",
    }),
    message: z.string(),
    issues: z.array(z.strictObject({ path: z.string(), message: z.string() })).optional(),
    constraints: z.array(z.strictObject({ constraint: z.string(), detail: z.string() })).optional(),
    failure: z.looseObject({ kind: z.string(), message: z.string() }).optional().meta({
      description:
        "an agent verb's failure as src/agents gives it (kind, message in the spec's field names, and its facts): the berth CLI words it exactly as it does on its own files (issue 36)",
    }),
  }),
});

export const TargetInfoSchema = z.looseObject({
  addr: z.string(),
  node_id: z.string().nullable(),
  key: z.string().nullable(),
  name: z.string().nullable(),
  tier: Tier,
  tier_source: z.string(),
  liveness: z.enum(["unknown", "alive", "suspect", "dead"]),
  boot_id: z.string().nullable(),
  learned_ms: z.number().nullable(),
  last_ok_ms: z.number().nullable(),
  facts_expire_at_ms: z.number().nullable(),
  error: z.string().nullable(),
  facts: Json.nullable().meta({
    description: "summary of the node's last signed facts (board, arch, labels, memory); null before a describe",
  }),
  cordoned: z.boolean().meta({
    description: "issue 16: the operator cordoned the node (berth node cordon, drain or forget): no new placements",
  }),
  cordon_reason: z.string().nullable(),
  forgotten_ms: z.number().nullable().meta({
    description: "issue 16: when the operator declared the node dead for good (berth node forget); null if never",
  }),
  forget_reason: z.string().nullable(),
});

export const PlacementRecordSchema = z.strictObject({
  instance_id: z.string(),
  name: z.string(),
  node_id: z.string(),
  decision_id: z.string(),
  variant: z.string(),
  route: z.enum(["native", "emulated"]),
  package_id: z.string(),
  placed_ms: z.number(),
  adopted: z.boolean(),
  pending: z.string().nullable(),
});

const AttemptSchema = z.strictObject({
  node_id: z.string(),
  variant: z.string(),
  outcome: z.string(),
  code: z.string().nullable(),
  reason: z.string().nullable(),
  next: z.string().nullable(),
  instance_id: z.string().nullable(),
});

const DecisionSchema = z
  .looseObject({
    name: z.string(),
    kind: z.string(),
    package_id: z.string(),
    allow_emulated: z.boolean(),
    pin: z.string().nullable(),
    prefer: z.array(z.string()),
    avoid: z.array(z.string()),
    candidates: z.array(
      z.looseObject({
        node_id: z.string(),
        name: z.string().nullable(),
        eligible: z.boolean(),
        rejections: z.array(z.strictObject({ constraint: z.string(), detail: z.string() })),
        variant: z.string().nullable(),
        route: z.string().nullable(),
        execution: z.string().nullable(),
        score: Json.nullable(),
        total_centi: z.number().nullable(),
        flags: z.array(z.string()),
      }),
    ),
    placement: Json.nullable(),
  })
  .meta({
    description:
      "the placement engine's decision (core/placement/outputs.ts PlacementDecision): every candidate, its rejections and score breakdown",
  });

export const PlaceReportSchema = z.strictObject({
  decision: DecisionSchema,
  decision_id: z.string(),
  explain: z.string(),
  attempts: z.array(AttemptSchema),
  placed: PlacementRecordSchema.nullable(),
  unsettled: z.boolean(),
});

export const PastDecisionSchema = z.strictObject({
  decision_id: z.string(),
  state: z.string().meta({
    description: "dispatching, placed, unsettled, unplaced, or dry_run for a decision that dispatched nothing",
  }),
  name: z.string(),
  package_id: z.string(),
  created_ms: z.number(),
  dry_run: z.boolean(),
  decision: DecisionSchema,
  explain: z.string(),
  attempts: z.array(
    z.looseObject({
      n: z.number(),
      node_id: z.string(),
      variant: z.string(),
      state: z.string(),
      outcome: z.string().nullable(),
    }),
  ),
});

const UnsettledSchema = z.looseObject({
  decision_id: z.string(),
  name: z.string(),
  node_id: z.string(),
  variant: z.string(),
  package_id: z.string(),
  created_ms: z.number(),
  workload: Json,
});

const SettleReportSchema = z.strictObject({
  adopted: z.number(),
  settledEmpty: z.number(),
  skipped: z.array(z.strictObject({ decision_id: z.string(), reason: z.string() })),
});

export const VerbResultSchema = z
  .looseObject({
    kind: z.enum(["ok", "refused", "unreachable", "indeterminate", "error"]),
    verb: z.string(),
    instance_id: z.string(),
    node: z.string().optional(),
    result: Json.optional(),
    code: z.string().optional(),
    reason: z.string().optional(),
  })
  .meta({
    description:
      "the controller's VerbResult: ok with the node's result, or refused/unreachable/indeterminate/error with why",
  });

/** Issue 16: a placement taken off its node (move-records.ts `MovedRecord`); its old copy may still be there. */
const MovedSchema = z.strictObject({
  instance_id: z.string(),
  name: z.string(),
  node_id: z.string().meta({ description: "the node the placement was taken off (the old copy's node)" }),
  decision_id: z.string(),
  package_id: z.string(),
  authority: z.enum(["lease", "lost", "drain", "forget"]).meta({
    description:
      "who moved it: a dead leased node's lease ran out, a lost instance, berth node drain, berth node forget",
  }),
  moved_ms: z.number(),
  moves: z.number().meta({ description: "the lineage's moves including this one (at most 5)" }),
  successor: z
    .string()
    .nullable()
    .meta({ description: "the decision that placed the agent elsewhere (or took its name); null while nothing has" }),
});

const InstanceSchema = PlacementRecordSchema.extend({
  state: z.string().meta({
    description:
      "the node's state for the instance from a signed status (running, exited, …), or unknown when it did not answer",
  }),
  status: Json.nullable(),
});

export const SealedEventSchema = z.strictObject({
  seq: z.number(),
  chain_id: z.string(),
  ts: z.number(),
  prev_hash: z.string(),
  source: z.string(),
  kind: z.string(),
  payload: Json,
  payload_hash: z.string(),
  hash: z.string(),
  sig: z.string(),
});

const AgentDeploySchema = z
  .looseObject({
    agent: z.string(),
    target: z.enum(["mesh", "kubernetes"]),
    intent: z.string(),
    ok: z.boolean(),
    outcome: z.string(),
    message: z.string(),
    instance: z.string().nullable(),
    pending_edit: z.boolean(),
    row: z.string().nullable(),
    action: z.string().nullable(),
    fence: Json.nullable(),
    observation: Json.nullable(),
    rounds: z.array(Json),
  })
  .meta({ description: "the agent.deploy payload (core/agents/deploy-event.ts), as `berth deploy --json` prints it" });

/** Issue 36: `POST /agents?dryRun=true`, as `berth deploy --dry-run --json` prints it (core/agents/deploy-plan.ts). */
const DeployPlanSchema = z
  .strictObject({
    dry_run: z.literal(true),
    agent: z.string(),
    target: z.enum(["mesh", "kubernetes"]),
    intent: z.string(),
    row: z.string(),
    action: z.string(),
    instance: z.string().nullable(),
    replaces: z.strictObject({ instance: z.string(), node: z.string().nullable(), fence: Json }).nullable(),
    placement: z
      .strictObject({ node: z.string().nullable(), explain: z.string(), error: z.string().nullable() })
      .nullable(),
    observation: Json,
    message: z.string(),
  })
  .meta({
    description:
      "what a deploy would do now (the row, the action, what it would replace, where it would place and why); nothing was done or chained",
  });

/** Issue 36: `GET /agents/{name}/history` (src/agents/history.ts). */
const AgentHistorySchema = z.strictObject({
  agent: z.string(),
  current: z.number().int().nullable(),
  revisions: z.array(
    z.strictObject({
      revision: z.number().int(),
      spec_sha256: z.string(),
      intent: z.string(),
      spec_path: z.string(),
      seq: z.number().int(),
      deployed_ms: z.number(),
      deploys: z.number().int(),
      rollback_of: z.number().int().nullable(),
      kept: z.boolean(),
      diff: z.array(z.string()).nullable(),
    }),
  ),
});

export const AgentStateSchema = z.strictObject({
  name: z.string(),
  target: z.string(),
  state: z.string(),
  row: z.string().nullable(),
  next: z.string().nullable(),
  instance: z.string().nullable(),
  observation: Json.nullable(),
  error: z.string().nullable(),
  /** Issue 15 (mesh agents): the node's lifecycle state of the current instance and its supervisor's restarts. */
  lifecycle: z.string().nullable().optional(),
  restarts: z.number().int().nullable().optional(),
  /** Issue 36: when the current instance's process last started (mesh; ms since the epoch). */
  started_ms: z.number().nullable().optional(),
  /** Issue 33: the last deploy of this agent failed after it was accepted; its message says why. */
  last_deploy: z.string().nullable().optional(),
});

const K8sListRowSchema = z.strictObject({
  name: z.string(),
  namespace: z.string(),
  binding: z.string(),
  startup: z.string(),
  registry: z.string(),
});

const ChainInfoSchema = z.strictObject({
  name: z.string().meta({ description: "controller or k8s: the name to pass as ?chain=" }),
  chain_id: z.string(),
  owner_key: z.string(),
  role: z.string(),
  events: z.number(),
  head: z.strictObject({ seq: z.number(), hash: z.string() }),
});

const VerifyResultSchema = z.looseObject({
  ok: z.boolean(),
  chain_id: z.string().nullable(),
  events: z.number(),
  head: z.strictObject({ seq: z.number(), hash: z.string() }).nullable(),
  checkpoints: z.number(),
  keySelfAsserted: z.boolean(),
  failure: Json.optional(),
});

// ---- inputs -----------------------------------------------------------------------------------------------------------

export const ChainName = z.enum(["controller", "k8s"], { error: 'must be "controller" or "k8s"' });

export const Inputs = {
  nodesQuery: z.strictObject({
    refresh: z.enum(["true", "false"]).optional(),
    labelSelector: z.string().max(4096).optional().meta({
      description:
        "issue 36: only the nodes whose labels (node.json `labels`, in their facts) it selects, after describing every node (key=value, key!=value, key, !key; commas: all)",
    }),
  }),
  addNode: z.strictObject({
    addr: z.string().regex(/^[^\s:]+:\d{1,5}$/, "must be HOST:PORT"),
    tier: Tier.optional(),
    key: Hex64.optional().meta({
      description: "the node's Ed25519 public key; without it the first describe is trusted (TOFU)",
    }),
  }),
  nodeRef: z.strictObject({ ref: NodeRef }),
  setTier: z.strictObject({ tier: Tier }),
  /** Issue 16: `berth node cordon|uncordon|forget|drain` (src/mesh/controller/node-admin.ts). */
  nodeAdmin: z.strictObject({
    reason: z
      .string()
      .trim()
      .min(1, "must say why")
      .refine((r) => Buffer.byteLength(r, "utf8") <= 1024, "must be at most 1024 bytes"),
    operator: z
      .strictObject({
        user: z.string().max(256),
        uid: z.number().int(),
        pid: z.number().int(),
        host: z.string().max(256),
        via: z.string().max(256),
      })
      .optional()
      .meta({ description: "who the CLI says asked (chained beside the token's identity)" }),
  }),
  addPackage: z.strictObject({
    path: z.string().min(1).max(4096).meta({ description: "a built and signed package directory on the server host" }),
  }),
  place: PlaceOrderSchema.omit({ dry_run: true, agent: true, intent: true, env_from: true }),
  decisionRef: z.strictObject({ decision_id: Hex64 }),
  instanceRef: z.strictObject({ id: z.string().min(1).max(128) }),
  instanceVerb: z.strictObject({
    grace_ms: z
      .number()
      .int()
      .min(0)
      .max(60_000)
      .optional()
      .meta({ description: "stop: SIGTERM grace before SIGKILL" }),
    purge: z
      .boolean()
      .optional()
      .meta({ description: "unload: also remove the name's workspace ($HOME) on the node (issue 15)" }),
  }),
  labelQuery: z.strictObject({
    labelSelector: z.string().max(4096).optional().meta({
      description:
        "issue 36: only the agents whose metadata.labels it selects (key=value, key!=value, key, !key; commas: all)",
    }),
  }),
  agentRollback: z.strictObject({ revision: z.number().int().min(1).optional() }),
  deployQuery: z.strictObject({
    dryRun: z
      .enum(["true", "false"])
      .optional()
      .meta({ description: "true: answer the plan only (issue 36); nothing is done or chained" }),
    source: z
      .string()
      .min(1)
      .max(4096)
      .refine((v) => ![...v].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), "must be printable text")
      .optional()
      .meta({
        description: "how messages name the spec (the CLI's FILE); without it they start at the field (issue 36)",
      }),
  }),
  logsQuery: z.strictObject({ tail_bytes: z.coerce.number().int().min(0).max(65_536).optional() }),
  agentRef: z.strictObject({
    name: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "must be an agent name (a DNS label)"),
  }),
  agentSpec: Json.meta({
    description:
      "an agent spec (core/agents/spec.ts AgentSpecSchema: apiVersion berth/v1, kind Agent, metadata, spec) as JSON; a relative spec.package resolves against the server's data directory",
  }),
  /** Issue 36: the name of the spec as its author knows it (`berth deploy FILE`'s FILE), used only in messages. */
  specSourceQuery: z.strictObject({
    source: z
      .string()
      .min(1)
      .max(4096)
      .refine((v) => ![...v].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), "must be printable text")
      .optional()
      .meta({ description: "how messages name the spec (the CLI's FILE); without it they start at the field" }),
  }),
  agentStop: z.strictObject({
    wait: z.boolean().optional().meta({
      description:
        "Kubernetes: answer once the pod is gone and its Secret removed (the mesh's stop answers when the node has stopped it)",
    }),
  }),
  agentReplace: z.strictObject({
    spec: Json.optional().meta({ description: "deploy this spec instead of the one last deployed" }),
  }),
  /** Issue 33: `berth agent delete NAME`. */
  agentDelete: z.strictObject({
    operator: z
      .strictObject({
        user: z.string().max(256),
        uid: z.number().int(),
        pid: z.number().int(),
        host: z.string().max(256),
        via: z.string().max(256),
      })
      .optional()
      .meta({ description: "who the CLI says asked (chained beside the token's identity)" }),
  }),
  k8sListQuery: z.strictObject({
    namespace: z.string().min(1).max(63).optional(),
    labelSelector: z.string().max(4096).optional().meta({
      description:
        "issue 36: only the pods whose labels match (key=value, key!=value, key, !key; commas: all must hold), evaluated by the apiserver beside the management marker",
    }),
  }),
  k8sAgentRef: z.strictObject({
    name: z.string().min(1).max(128).meta({ description: "the agent's pod name or its 64-hex public key" }),
  }),
  k8sAgentQuery: z.strictObject({ namespace: z.string().min(1).max(63) }),
  k8sLogsQuery: z.strictObject({
    namespace: z.string().min(1).max(63),
    tail: z.coerce.number().int().min(0).max(100_000).optional(),
  }),
  k8sDeploy: Json.meta({
    description: "a Kubernetes deploy request, shaped like `berth k8s deploy FILE` (the provider's deploy request)",
  }),
  k8sStop: z.strictObject({ namespace: z.string().min(1).max(63), wait: z.boolean().default(false) }),
  auditChainQuery: z.strictObject({ chain: ChainName.default("controller") }),
  auditEventsQuery: z.strictObject({
    chain: ChainName.default("controller"),
    after: z.coerce.number().int().min(-1).default(-1).meta({ description: "events with seq greater than this" }),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  }),
} as const;

// ---- the route table ----------------------------------------------------------------------------------------------------

const list = <T extends z.ZodType>(key: string, item: T) => z.strictObject({ [key]: z.array(item) });

export const ROUTES: readonly RouteSpec[] = [
  {
    id: "health",
    method: "GET",
    path: "/health",
    tag: "meta",
    public: true,
    summary: "liveness and version",
    status: 200,
    response: z.strictObject({ ok: z.literal(true), version: z.string() }),
  },
  {
    id: "openapi",
    method: "GET",
    path: "/openapi.json",
    tag: "meta",
    public: true,
    summary: "this OpenAPI 3.1 document",
    status: 200,
    response: Json,
  },

  {
    id: "listNodes",
    method: "GET",
    path: "/nodes",
    tag: "nodes",
    summary: "known nodes with tier, liveness and facts; refresh=true describes every node first",
    query: Inputs.nodesQuery,
    status: 200,
    response: list("nodes", TargetInfoSchema),
  },
  {
    id: "addNode",
    method: "POST",
    path: "/nodes",
    tag: "nodes",
    mutating: true,
    summary: "add a node by address (TOFU, or a describe that must be answered by key)",
    body: Inputs.addNode,
    status: 201,
    response: z.strictObject({ node: TargetInfoSchema }),
    errors: [422],
  },
  {
    id: "cordonNode",
    method: "POST",
    path: "/nodes/{ref}/cordon",
    tag: "nodes",
    mutating: true,
    summary: "no new placements on the node (issue 16); chained as node.cordon",
    params: Inputs.nodeRef,
    body: Inputs.nodeAdmin,
    status: 200,
    response: Json,
    errors: [404],
  },
  {
    id: "uncordonNode",
    method: "POST",
    path: "/nodes/{ref}/uncordon",
    tag: "nodes",
    mutating: true,
    summary: "the node takes new placements again; chained as node.uncordon",
    params: Inputs.nodeRef,
    body: Inputs.nodeAdmin,
    status: 200,
    response: Json,
    errors: [404],
  },
  {
    id: "forgetNode",
    method: "POST",
    path: "/nodes/{ref}/forget",
    tag: "nodes",
    mutating: true,
    summary:
      "declare the node dead for good: its placements and unsettled decisions are released (issue 16); chained as node.forget",
    params: Inputs.nodeRef,
    body: Inputs.nodeAdmin,
    status: 200,
    response: Json,
    errors: [404],
  },
  {
    id: "removeNode",
    method: "POST",
    path: "/nodes/{ref}/remove",
    tag: "nodes",
    mutating: true,
    summary:
      "take a forgotten node off the list (issue 36: berth nodes remove); 409 naming its state when it was not forgotten; chained as peer.remove",
    params: Inputs.nodeRef,
    body: Inputs.nodeAdmin,
    status: 200,
    response: Json,
    errors: [404, 409],
  },
  {
    id: "drainNode",
    method: "POST",
    path: "/nodes/{ref}/drain",
    tag: "nodes",
    mutating: true,
    summary: "move every agent off a live node, one at a time, never two copies (issue 16); chained as node.drain",
    params: Inputs.nodeRef,
    body: Inputs.nodeAdmin,
    status: 200,
    response: Json,
    errors: [404, 502],
  },
  {
    id: "setNodeTier",
    method: "PUT",
    path: "/nodes/{ref}/tier",
    tag: "nodes",
    mutating: true,
    summary: "set a node's tier (by node id or address); chained as peer.tier",
    params: Inputs.nodeRef,
    body: Inputs.setTier,
    status: 200,
    response: z.strictObject({ node: z.string(), tier: Tier }),
    errors: [404],
  },

  {
    id: "listPackages",
    method: "GET",
    path: "/packages",
    tag: "packages",
    summary: "packages in the controller's package store (verified copies it can place)",
    status: 200,
    response: list(
      "packages",
      z.strictObject({
        package_id: z.string(),
        name: z.string(),
        version: z.string(),
        kind: z.string(),
        description: z.string(),
        path: z.string(),
        variants: z.array(z.strictObject({ id: z.string(), arch: z.string(), os: z.string() })),
        signers: z.array(z.string()),
        verified: z.boolean(),
        error: z.string().nullable(),
      }),
    ),
  },
  {
    id: "addPackage",
    method: "POST",
    path: "/packages",
    tag: "packages",
    mutating: true,
    summary: "verify a built, signed package directory on the server host and copy it into the package store",
    body: Inputs.addPackage,
    status: 201,
    response: z.strictObject({ package_id: z.string(), name: z.string(), version: z.string(), path: z.string() }),
    errors: [422],
  },

  {
    id: "listPlacements",
    method: "GET",
    path: "/placements",
    tag: "placements",
    summary: "placement records",
    status: 200,
    response: list("placements", PlacementRecordSchema),
  },
  {
    id: "place",
    method: "POST",
    path: "/placements",
    tag: "placements",
    mutating: true,
    recordRides: true,
    summary: "decide, record and place (the PlaceReport with its explain)",
    body: Inputs.place,
    status: 201,
    response: PlaceReportSchema,
    errors: [409, 422, 503],
  },
  {
    id: "explain",
    method: "POST",
    path: "/placements/explain",
    tag: "placements",
    mutating: true,
    recordRides: true,
    summary: "dry run: decide and record the decision, send nothing",
    body: Inputs.place,
    status: 200,
    response: PlaceReportSchema,
    errors: [409, 422],
  },
  {
    id: "getPlacement",
    method: "GET",
    path: "/placements/{decision_id}",
    tag: "placements",
    summary: "a past decision with its candidates, attempts and explain",
    params: Inputs.decisionRef,
    status: 200,
    response: PastDecisionSchema,
    errors: [404],
  },

  {
    id: "listInstances",
    method: "GET",
    path: "/instances",
    tag: "instances",
    query: Inputs.labelQuery,
    summary:
      "placed instances with the node's state (one signed status per node); labelSelector: only the instances of agents whose metadata.labels match (issue 36)",
    status: 200,
    response: list("instances", InstanceSchema),
  },
  {
    id: "listMoved",
    method: "GET",
    path: "/moved",
    tag: "instances",
    summary:
      "placements taken off their node (issue 16: lease, loss, drain, forget) whose old copy berth has not settled yet",
    status: 200,
    response: list("moved", MovedSchema),
  },
  {
    id: "getInstance",
    method: "GET",
    path: "/instances/{id}",
    tag: "instances",
    summary: "one instance's signed status from its node",
    params: Inputs.instanceRef,
    status: 200,
    response: VerbResultSchema,
    errors: [404, 502],
  },
  ...(["start", "stop", "unload"] as const).map(
    (verb): RouteSpec => ({
      id: `${verb}Instance`,
      method: "POST",
      path: `/instances/{id}/${verb}`,
      tag: "instances",
      mutating: true,
      summary: `${verb} an instance through its node`,
      params: Inputs.instanceRef,
      body: Inputs.instanceVerb,
      status: 200,
      response: VerbResultSchema,
      errors: [404, 409, 502],
    }),
  ),
  {
    id: "instanceLogs",
    method: "GET",
    path: "/instances/{id}/logs",
    tag: "instances",
    summary: "the instance's captured stdout and stderr (tails)",
    params: Inputs.instanceRef,
    query: Inputs.logsQuery,
    status: 200,
    response: VerbResultSchema,
    errors: [404, 502],
  },

  {
    id: "listUnsettled",
    method: "GET",
    path: "/unsettled",
    tag: "unsettled",
    summary: "decisions whose lost answer is not reconciled yet",
    status: 200,
    response: list("unsettled", UnsettledSchema),
  },
  {
    id: "settle",
    method: "POST",
    path: "/unsettled/settle",
    tag: "unsettled",
    mutating: true,
    summary: "ask the nodes now and adopt or release",
    body: z.strictObject({}),
    status: 200,
    response: z.strictObject({ settled: SettleReportSchema, unsettled: z.array(UnsettledSchema) }),
  },

  {
    id: "listAgents",
    method: "GET",
    path: "/agents",
    tag: "agents",
    query: Inputs.labelQuery,
    summary: "every agent deployed from this berth home with its state on its target",
    status: 200,
    response: list("agents", AgentStateSchema),
  },
  {
    id: "deployAgent",
    method: "POST",
    path: "/agents",
    tag: "agents",
    mutating: true,
    readOnlyWhen: (q) => (q as { dryRun?: string }).dryRun === "true",
    summary:
      "deploy an agent spec: idempotent, once (the deploy outcome, as `berth deploy --json`); ?dryRun=true answers what it would do and does nothing, not chained (`berth deploy --dry-run`)",
    query: Inputs.deployQuery,
    body: Inputs.agentSpec,
    status: 200,
    response: z.union([AgentDeploySchema, DeployPlanSchema]),
    errors: [409, 422, 502],
  },
  {
    id: "getAgent",
    method: "GET",
    path: "/agents/{name}",
    tag: "agents",
    summary: "the agent's state and what a deploy would do now",
    params: Inputs.agentRef,
    status: 200,
    response: AgentStateSchema,
    errors: [404],
  },
  {
    id: "agentLogs",
    method: "GET",
    path: "/agents/{name}/logs",
    tag: "agents",
    summary: "the agent's current instance's logs",
    params: Inputs.agentRef,
    query: Inputs.logsQuery,
    status: 200,
    response: z.looseObject({ agent: z.string(), instance: z.string(), stdout: z.string(), stderr: z.string() }),
    errors: [404, 409, 502],
  },
  {
    id: "purgeAgent",
    method: "POST",
    path: "/agents/{name}/purge",
    tag: "agents",
    mutating: true,
    summary: "unload the agent's instance and remove its workspace on its node (mesh; issue 15)",
    params: Inputs.agentRef,
    body: z.strictObject({}),
    status: 200,
    response: z.strictObject({
      ok: z.boolean(),
      agent: z.string(),
      instance: z.string().nullable(),
      message: z.string(),
      already_stopped: z.literal(true).optional().meta({
        description: "issue 36: the instance had stopped before this stop (nothing was stopped now); absent otherwise",
      }),
    }),
    errors: [404, 409, 502],
  },
  {
    id: "stopAgent",
    method: "POST",
    path: "/agents/{name}/stop",
    tag: "agents",
    mutating: true,
    summary: "stop the agent's instance (a later deploy starts it again); wait: until it is gone (Kubernetes)",
    params: Inputs.agentRef,
    body: Inputs.agentStop,
    status: 200,
    response: z.strictObject({
      ok: z.boolean(),
      agent: z.string(),
      instance: z.string().nullable(),
      message: z.string(),
    }),
    errors: [404, 409, 502],
  },
  {
    id: "agentHistory",
    method: "GET",
    path: "/agents/{name}/history",
    tag: "agents",
    summary:
      "the agent's spec revisions deployed, from the chain, each with its diff from the one before (`berth agent history NAME`)",
    params: Inputs.agentRef,
    status: 200,
    response: AgentHistorySchema,
    errors: [404],
  },
  {
    id: "rollbackAgent",
    method: "POST",
    path: "/agents/{name}/rollback",
    tag: "agents",
    mutating: true,
    summary:
      "deploy an earlier spec revision (default: the one before the current), remembered with rollback_of (`berth agent rollback NAME [REV]`)",
    params: Inputs.agentRef,
    body: Inputs.agentRollback,
    status: 200,
    response: AgentDeploySchema,
    errors: [404, 409, 422, 502],
  },
  {
    id: "startAgent",
    method: "POST",
    path: "/agents/{name}/start",
    tag: "agents",
    mutating: true,
    summary:
      "start a stopped agent again: a deploy of the spec last deployed (issue 33; the only other way a stopped agent runs again)",
    params: Inputs.agentRef,
    body: z.strictObject({}),
    status: 200,
    response: AgentDeploySchema,
    errors: [404, 409, 422, 502],
  },
  {
    id: "deleteAgent",
    method: "POST",
    path: "/agents/{name}/delete",
    tag: "agents",
    mutating: true,
    summary:
      "remove the agent's record once nothing of it runs (issue 33); ok false with the reason while an instance is there",
    params: Inputs.agentRef,
    body: Inputs.agentDelete,
    status: 200,
    response: z.strictObject({
      ok: z.boolean(),
      agent: z.string(),
      message: z.string(),
      event: z.strictObject({ seq: z.number().int(), hash: z.string() }).optional(),
    }),
    errors: [404, 409, 502],
  },
  {
    id: "replaceAgent",
    method: "POST",
    path: "/agents/{name}/replace",
    tag: "agents",
    mutating: true,
    summary: "stop the running instance now and start one from the spec",
    params: Inputs.agentRef,
    query: Inputs.specSourceQuery,
    body: Inputs.agentReplace,
    status: 200,
    response: AgentDeploySchema,
    errors: [404, 409, 422, 502],
  },

  {
    id: "listK8sAgents",
    method: "GET",
    path: "/k8s/agents",
    tag: "kubernetes",
    summary: "agent pods managed by berth or Buzz; configured:false without a Kubernetes context",
    query: Inputs.k8sListQuery,
    status: 200,
    response: z.strictObject({
      configured: z.boolean(),
      context: z.string().nullable(),
      agents: z.array(K8sListRowSchema),
      error: z.string().nullable(),
    }),
  },
  {
    id: "deployK8sAgent",
    method: "POST",
    path: "/k8s/agents",
    tag: "kubernetes",
    mutating: true,
    summary: "deploy a Kubernetes agent (as `berth k8s deploy --json`)",
    body: Inputs.k8sDeploy,
    status: 200,
    response: z.strictObject({ ok: z.boolean(), agent_id: z.string().optional(), error: z.string().optional() }),
    errors: [409, 422, 502],
  },
  {
    id: "getK8sAgent",
    method: "GET",
    path: "/k8s/agents/{name}",
    tag: "kubernetes",
    summary: "what the cluster says about one agent (as `berth k8s status --json`)",
    params: Inputs.k8sAgentRef,
    query: Inputs.k8sAgentQuery,
    status: 200,
    response: Json,
    errors: [404, 409, 502],
  },
  {
    id: "k8sAgentLogs",
    method: "GET",
    path: "/k8s/agents/{name}/logs",
    tag: "kubernetes",
    summary: "the agent container's log",
    params: Inputs.k8sAgentRef,
    query: Inputs.k8sLogsQuery,
    status: 200,
    response: z.strictObject({ pod: z.string(), namespace: z.string(), log: z.string() }),
    errors: [404, 409, 502],
  },
  {
    id: "stopK8sAgent",
    method: "POST",
    path: "/k8s/agents/{name}/stop",
    tag: "kubernetes",
    mutating: true,
    summary: "fenced, audited delete of the agent's pod",
    params: Inputs.k8sAgentRef,
    body: Inputs.k8sStop,
    status: 200,
    response: z.strictObject({ ok: z.boolean(), message: z.string() }),
    errors: [404, 409, 502],
  },
  {
    id: "replaceK8sAgent",
    method: "POST",
    path: "/k8s/agents/{name}/replace",
    tag: "kubernetes",
    mutating: true,
    summary: "fenced re-create of a never-started pod from the deploy request in the body",
    params: Inputs.k8sAgentRef,
    body: Inputs.k8sDeploy,
    status: 200,
    response: z.strictObject({ ok: z.boolean(), agent_id: z.string().optional(), error: z.string().optional() }),
    errors: [404, 409, 422, 502],
  },

  {
    id: "listChains",
    method: "GET",
    path: "/audit/chains",
    tag: "audit",
    summary: "the audit chains this server holds",
    status: 200,
    response: list("chains", ChainInfoSchema),
  },
  {
    id: "auditEvents",
    method: "GET",
    path: "/audit/events",
    tag: "audit",
    summary: "events after a seq, oldest first",
    query: Inputs.auditEventsQuery,
    status: 200,
    response: z.strictObject({ chain: ChainName, events: z.array(SealedEventSchema), head: z.number() }),
    errors: [404],
  },
  {
    id: "auditVerify",
    method: "GET",
    path: "/audit/verify",
    tag: "audit",
    summary: "verify the stored chain under its owner key",
    query: Inputs.auditChainQuery,
    status: 200,
    response: VerifyResultSchema,
    errors: [404],
  },
  {
    id: "auditExport",
    method: "GET",
    path: "/audit/export",
    tag: "audit",
    summary: "the chain as JSON lines (one sealed event per line)",
    query: Inputs.auditChainQuery,
    status: 200,
    response: z.string(),
    produces: "application/x-ndjson",
    errors: [404],
  },
  {
    id: "auditStream",
    method: "GET",
    path: "/audit/stream",
    tag: "audit",
    summary:
      "server-sent events: `event: audit`, `id: <seq>`, data = the sealed event; resumable with Last-Event-ID; a comment heartbeat every 15 s",
    query: Inputs.auditChainQuery,
    status: 200,
    response: z.string(),
    produces: "text/event-stream",
    errors: [404],
  },
  // contract-operator.ts: doctor, rehome, backup and the audit verbs beyond reading (issue 13).
  ...OPERATOR_ROUTES,
  // contract-tlog.ts: the Merkle proofs and the C2SP tlog tiles of the controller chain (issue 38).
  ...TLOG_ROUTES,
];
