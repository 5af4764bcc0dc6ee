/**
 * `status` and `logs` (spec/mesh.md §10.3, §11.3, §13): in-flight rows are read before instances in one read
 * transaction (the store's snapshot), so a decision is always visible as one or the other (I1).
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { BodyOf } from "../../core/protocol/bodies.js";
import type { NodeContext } from "./context.js";
import { identityOf } from "./processes.js";
import type { InstanceRow } from "./store.js";

const DEPARTED_WINDOW_MS = 7 * 24 * 3600 * 1000;
const MAX_STATUS_ROWS = 4096;

export function status(ctx: NodeContext, body: BodyOf<"status">): JsonObject {
  const restarts = ctx.supervision.restartCounts();
  const usageOf = (r: InstanceRow) =>
    r.state === "running" || r.state === "unhealthy" ? ctx.runtime.usage(r.instance_id, identityOf(r)) : null;
  if (body.instance_id !== null)
    return {
      row: withUsage(
        statusRow(ctx.held(body.instance_id), restarts),
        ctx.held(body.instance_id),
        usageOf,
      ) as unknown as JsonObject,
    };
  const since = body.include_departed ? ctx.o.clock() - DEPARTED_WINDOW_MS : null;
  const snap = ctx.store.snapshot(since);
  const rows: JsonObject[] = [
    ...snap.inflight.map((r) => ({
      decision_id: r.decision_id,
      in_flight: true,
      method: r.method,
      since_ms: r.started_ms,
    })),
    ...snap.instances.map((r) => withUsage(statusRow(r, restarts), r, usageOf) as unknown as JsonObject),
    ...snap.departed.map((d) => ({
      instance_id: d.instance_id,
      decision_id: d.decision_id,
      departed: d.reason,
      at_ms: d.at_ms,
    })),
  ];
  return { rows: rows.slice(0, MAX_STATUS_ROWS) };
}

export function logs(ctx: NodeContext, body: BodyOf<"logs">): JsonObject {
  const row = ctx.held(body.instance_id);
  return { ...ctx.runtime.readLogs(row.instance_id, body.tail_bytes), state: row.state, exit_code: row.exit_code };
}

/** Issue 36: a running instance's row carries `usage` (CPU time, memory); an older controller ignores the field. */
function withUsage<T extends object>(row: T, r: InstanceRow, usageOf: (r: InstanceRow) => object | null): T {
  const usage = usageOf(r);
  return usage ? { ...row, usage } : row;
}

export function statusRow(r: InstanceRow, restarts: ReadonlyMap<string, number>) {
  return {
    instance_id: r.instance_id,
    decision_id: r.decision_id,
    name: r.name,
    package_id: r.package_id,
    variant: r.variant,
    route: r.route,
    state: r.state,
    exit_code: r.exit_code,
    signal: r.signal,
    detail: r.detail,
    pid: r.pid,
    started_ms: r.started_ms,
    requester: r.requester,
    agent: r.agent,
    intent: r.intent,
    generation: r.generation,
    restart_policy: r.launch.restart ?? "never",
    restarts: restarts.get(r.instance_id) ?? 0,
  };
}
