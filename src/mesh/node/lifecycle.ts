/**
 * The lifecycle verbs on a held instance (spec/mesh.md §11.2, §11.3): `start`, `stop`, `unload`, each gated, each
 * state change chained. An unload carrying a generation (issue 7's fence) never touches a restarted instance.
 * Issue 15: each verb first quiesces the supervisor (no restart pending or in progress), then reads the row again: a
 * stop is final (a pending restart is cancelled), a start begins a fresh restart budget, and a fence is checked
 * against the generation a supervised restart may just have moved on.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { BodyOf } from "../../core/protocol/bodies.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import { type NodeContext, Refusal } from "./context.js";
import { runtimeEvent } from "./events.js";
import { spawnInstance, stopInstance } from "./processes.js";
import { type InstanceRow, isLive } from "./store.js";
import { purgeWorkspace } from "./workspace.js";

export async function start(ctx: NodeContext, req: VerifiedRequest, body: BodyOf<"start">): Promise<JsonObject> {
  const asked = ctx.held(body.instance_id);
  if (isLive(asked.state)) return { started: false, already: true };
  if (asked.state === "loading" || asked.state === "starting")
    throw new Refusal("invalid_request", `instance ${asked.instance_id} is ${asked.state}`);
  ctx.permit("workload.start", asked, req.requester);
  await ctx.supervision.quiesce(asked.instance_id);
  const row = ctx.held(body.instance_id);
  if (isLive(row.state)) return { started: false, already: true };
  ctx.supervision.operatorStarted(row.instance_id);
  try {
    await spawnInstance(ctx, row);
  } catch (error) {
    throw new Refusal("runtime", (error as Error).message);
  }
  return { started: true, already: false };
}

export async function stop(ctx: NodeContext, req: VerifiedRequest, body: BodyOf<"stop">): Promise<JsonObject> {
  ctx.permit("workload.stop", ctx.held(body.instance_id), req.requester);
  await ctx.supervision.quiesce(body.instance_id);
  const row = ctx.held(body.instance_id);
  if (row.state === "backoff") return cancelRestart(ctx, row, req.decision_id);
  const result = await stopInstance(ctx, row, body.grace_ms, "workload.stop", req.decision_id);
  if (!result.stopped) throw new Refusal("runtime", `instance ${row.instance_id} did not stop after SIGKILL`);
  return { stopped: !result.already, already: result.already, exit_code: result.exit_code, signal: result.signal };
}

export async function unload(ctx: NodeContext, req: VerifiedRequest, body: BodyOf<"unload">): Promise<JsonObject> {
  const { store, runtime } = ctx;
  const fenced = (row: InstanceRow) => {
    // Issue 7: a fenced unload names the generation it observed; a restarted (changed) instance is never touched.
    if (body.generation !== undefined && body.generation !== row.generation) {
      throw new Refusal(
        "precondition_failed",
        `generation precondition failed: instance ${row.instance_id} is at generation ${row.generation}, not ${body.generation}`,
      );
    }
  };
  const asked = ctx.held(body.instance_id);
  fenced(asked);
  ctx.permit("workload.unload", asked, req.requester);
  await ctx.supervision.quiesce(body.instance_id);
  // Issue 15: a supervised restart that was in progress moved the generation on; the fence refuses it now.
  const row = ctx.held(body.instance_id);
  fenced(row);
  const stopped = await stopInstance(ctx, row, 2000, "workload.stop", req.decision_id);
  if (!stopped.stopped) {
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, { detail: "unload failed: the process group did not exit" });
      return { result: null, events: [] };
    });
    throw new Refusal("runtime", `unload of ${row.instance_id} failed: the process group did not exit`);
  }
  try {
    runtime.remove(row.instance_id);
  } catch (error) {
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, { detail: `unload failed: ${(error as Error).message}` });
      return { result: null, events: [] };
    });
    throw new Refusal("runtime", `unload of ${row.instance_id} failed: ${(error as Error).message}`);
  }
  // Issue 15: the workspace goes only when asked, in the unload's own chained step.
  const purged = body.purge === true ? purgeWorkspace(ctx.o.dataDir, row.name) : null;
  store.commit((tx) => {
    store.removeInstance(tx, row.instance_id, req.decision_id ?? row.decision_id, "unloaded", ctx.o.clock());
    return {
      result: null,
      events: [
        runtimeEvent("workload.unload", row, {
          outcome: "ok",
          decision_id: req.decision_id ?? row.decision_id,
          ...(purged !== null ? { workspace: purged ? "purged" : "none" } : {}),
        }),
      ],
    };
  });
  ctx.log.info(
    {
      instance_id: row.instance_id,
      name: row.name,
      decision_id: req.decision_id,
      ...(purged !== null ? { workspace_purged: purged } : {}),
    },
    "instance unloaded",
  );
  return { unloaded: true, ...(purged !== null ? { workspace_purged: purged } : {}) };
}

/** A stop through berth during a backoff: the pending restart is cancelled for good (the stop is final). */
function cancelRestart(ctx: NodeContext, row: InstanceRow, decisionId: string | null): JsonObject {
  const reason = "stopped through berth during the restart backoff; the pending restart is cancelled";
  ctx.store.commit((tx) => {
    ctx.store.updateInstance(tx, row.instance_id, { state: "stopped", detail: null });
    return {
      result: null,
      events: [
        {
          source: "node",
          kind: "workload.lifecycle",
          payload: { phase: "supervise", instance_id: row.instance_id, from: "backoff", to: "stopped", reason },
        },
        runtimeEvent("workload.stop", row, {
          outcome: "ok",
          exit_code: row.exit_code,
          signal: row.signal,
          ...(decisionId ? { decision_id: decisionId } : {}),
        }),
      ],
    };
  });
  ctx.log.info(
    { instance_id: row.instance_id, name: row.name, decision_id: decisionId },
    "instance stopped during its restart backoff",
  );
  return { stopped: false, already: true, exit_code: row.exit_code, signal: row.signal };
}
