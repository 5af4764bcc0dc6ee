/**
 * `berth deploy --dry-run` on the mesh (issue 36): the placement a deploy would make, decided exactly as `place()`
 * decides it (dispatch.ts steps 1–5: validate, prepare, gate, engine) but with nothing written: no decision or refusal
 * chained, no gate verdict chained, no package copied into the store, no revocation list pushed, no request sent.
 * `berth place --dry-run` is different on purpose: it chains its decision (an explain that can be cited later); a plan
 * before a deploy is a read.
 *
 *   order ─validate─▶ package verified (read only) ─▶ the targets' views as last described ─▶ place verdicts (not
 *         chained) ─▶ engine decision ─▶ explain (decision id: none, nothing was decided on record)
 */
import {
  decide,
  historyReads,
  type PlacementDecision,
  parsePlacementInputWithParts,
  renderExplain,
} from "../../core/placement/index.js";
import { err, ok, type Result } from "../../kit/result.js";
import type { DispatchDeps } from "./dispatch.js";
import { consult, contextOf, gatePolicyOf } from "./gate.js";
import { type PlaceOrderInput, PlaceOrderSchema } from "./order.js";
import { inspectPackage, workloadRecordOf, workloadSpecOf } from "./prepare.js";
import { envFromProblem } from "./stored-order.js";

/** Why nothing would be decided: which step refused, its message, and the constraints the engine named. */
export interface PreviewRefusal {
  readonly code: "invalid_order" | "prepare" | "decision";
  readonly message: string;
  readonly constraints: ReadonlyArray<{ constraint: string; detail: string }>;
}

export type PlacePreview = Result<{ readonly decision: PlacementDecision; readonly explain: string }, PreviewRefusal>;

/** What `place(order)` would decide now; reads only (the targets were described by the caller's observation). */
export async function previewOrder(deps: DispatchDeps, input: PlaceOrderInput): Promise<PlacePreview> {
  const parsed = PlaceOrderSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return err({
      code: "invalid_order",
      message: `place order: field ${issue?.path.map(String).join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
      constraints: [],
    });
  }
  const order = parsed.data;
  const envFrom = envFromProblem(order);
  if (envFrom !== null) return err({ code: "invalid_order", message: envFrom, constraints: [] });
  const policy = await deps.readPolicy(false);
  const inspected = inspectPackage(order.package, deps.dataDir, policy);
  if (!inspected.ok) return err({ code: "prepare", message: inspected.error, constraints: [] });
  const pkg = inspected.value;
  const name = order.name ?? pkg.statement.name;
  const workload = workloadRecordOf(pkg);
  const views = await deps.targets.views();
  const gatePolicy = gatePolicyOf(policy, deps.gate);
  // A node behind the latest revocation list is said so without pushing to it (dispatch.ts does the same for a dry run).
  const lag =
    deps.revocationLag === undefined
      ? new Map<string, string>()
      : await deps.revocationLag(
          views.map((v) => v.node_id),
          policy,
          false,
        );
  const verdicts: Record<string, { verdict: "permit" | "deny"; reason: string }> = {};
  for (const v of views) {
    const { verdict } = consult(
      "workload.place",
      contextOf(workload, v.tier, deps.controllerId, false),
      gatePolicy,
      v.node_id,
    );
    const behind = lag.get(v.node_id);
    verdicts[v.node_id] =
      behind !== undefined
        ? { verdict: "deny", reason: behind }
        : { verdict: verdict.decision === "permit" ? "permit" : "deny", reason: verdict.reason };
  }
  const revoked = policy.revocations?.subjects ?? [];
  const input0 = parsePlacementInputWithParts(
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
        cordoned_nodes: [...((await deps.moves?.cordoned()) ?? [])],
      },
    },
    { nodes: views, weights: deps.weights, gate: verdicts, instances: [], placed: [] },
  );
  if (!input0.ok)
    return err({
      code: "decision",
      message: input0.error.message,
      constraints: input0.error.constraints.map((c) => ({ constraint: c.constraint, detail: c.detail })),
    });
  const history = await deps.store.placementHistory(historyReads(input0.value.request, input0.value.nodes));
  const result = decide({ ...input0.value, cluster: { ...input0.value.cluster, ...history } });
  if (!result.ok)
    return err({
      code: "decision",
      message: result.error.message,
      constraints: result.error.constraints.map((c) => ({ constraint: c.constraint, detail: c.detail })),
    });
  return ok({ decision: result.value, explain: renderExplain(result.value) });
}
