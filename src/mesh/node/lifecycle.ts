/**
 * The lifecycle verbs on a held instance (spec/mesh.md §11.2, §11.3): `start`, `stop`, `unload`, each gated, each
 * state change chained. An unload carrying a generation (issue 7's fence) never touches a restarted instance.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { BodyOf } from "../../core/protocol/bodies.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import { type NodeContext, Refusal } from "./context.js";
import { runtimeEvent } from "./events.js";
import { spawnInstance, stopInstance } from "./processes.js";

export async function start(ctx: NodeContext, req: VerifiedRequest, body: BodyOf<"start">): Promise<JsonObject> {
  const row = ctx.held(body.instance_id);
  if (row.state === "running") return { started: false, already: true };
  if (row.state === "loading" || row.state === "starting") throw new Refusal("invalid_request", `instance ${row.instance_id} is ${row.state}`);
  ctx.permit("workload.start", row, req.requester);
  try {
    await spawnInstance(ctx, row);
  } catch (error) {
    throw new Refusal("runtime", (error as Error).message);
  }
  return { started: true, already: false };
}

export async function stop(ctx: NodeContext, req: VerifiedRequest, body: BodyOf<"stop">): Promise<JsonObject> {
  const row = ctx.held(body.instance_id);
  ctx.permit("workload.stop", row, req.requester);
  const result = await stopInstance(ctx, row, body.grace_ms, "workload.stop", req.decision_id);
  if (!result.stopped) throw new Refusal("runtime", `instance ${row.instance_id} did not stop after SIGKILL`);
  return { stopped: !result.already, already: result.already, exit_code: result.exit_code, signal: result.signal };
}

export async function unload(ctx: NodeContext, req: VerifiedRequest, body: BodyOf<"unload">): Promise<JsonObject> {
  const { store, runtime } = ctx;
  const row = ctx.held(body.instance_id);
  // Issue 7: a fenced unload names the generation it observed; a restarted (changed) instance is never touched.
  if (body.generation !== undefined && body.generation !== row.generation) {
    throw new Refusal("precondition_failed", `generation precondition failed: instance ${row.instance_id} is at generation ${row.generation}, not ${body.generation}`);
  }
  ctx.permit("workload.unload", row, req.requester);
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
  store.commit((tx) => {
    store.removeInstance(tx, row.instance_id, req.decision_id ?? row.decision_id, "unloaded", ctx.o.clock());
    return { result: null, events: [runtimeEvent("workload.unload", row, { outcome: "ok", decision_id: req.decision_id ?? row.decision_id })] };
  });
  ctx.log.info({ instance_id: row.instance_id, name: row.name, decision_id: req.decision_id }, "instance unloaded");
  return { unloaded: true };
}
