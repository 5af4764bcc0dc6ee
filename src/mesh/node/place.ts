/**
 * `place` and `load` (spec/mesh.md §11.1), step by step. Structural rules:
 *
 * - the decision is marked in flight before anything is fetched, and the instance row is inserted before the in-flight
 *   mark is cleared, so `status` always sees a decision as one or the other (I1, §10.3);
 * - the package is fetched over the request's own connection, so a request whose connection is gone can never load;
 * - nothing runs unless the package verifies against this node's own trusted signers (I6);
 * - a start that fails after load is rolled back (unloaded) and refused; if the unload fails the row stays listed.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { EventDraft } from "../../core/chain/event.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { ParseMemo } from "../../core/parse-memo.js";
import { sha256 } from "../../core/crypto/tagged.js";
import { admit } from "../../core/node/admission.js";
import { revocationsChanged } from "../../core/node/revocation.js";
import { routeFor } from "../../core/node/route.js";
import { checkRunConfig, surfaceOf } from "../../core/packages/config-surface.js";
import {
  archOfNode,
  type Envelope,
  type ParsedEnvelope,
  parseEnvelope,
  type Variant,
  verifyParsedEnvelope,
} from "../../core/packages/manifest.js";
import type { BodyOf } from "../../core/protocol/bodies.js";
import { composeReason, type RefusalCode, truncateUtf8 } from "../../core/protocol/messages.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import type { FrameStream } from "../transport/frames.js";
import { FetchFailure, PackageFetcher } from "./content.js";
import { type NodeContext, Refusal } from "./context.js";
import { runtimeEvent } from "./events.js";
import { availableMemory } from "./facts.js";
import { spawnInstance } from "./processes.js";
import { forcedTeardown, revokedSubjectOf } from "./revocation.js";
import type { ProcessIdentity } from "./runtime.js";
import type { InstanceRow, LaunchSpec } from "./store.js";

export async function place(
  ctx: NodeContext,
  req: VerifiedRequest,
  stream: FrameStream,
  method: "place" | "load",
): Promise<JsonObject> {
  const { store, runtime, o } = ctx;
  const decisionId = req.decision_id as string;
  const now = o.clock();
  // 1. mark in flight first. This commit and those of steps 8 and 10 are not synced on their own: the request's last
  // commit before its answer (step 11's `running`, step 13, or the refusal's in service.ts) syncs them with it
  // (store.ts `commitUnsynced`, issue 19), so a place waits for the disk once.
  const pol0 = ctx.policy.read();
  store.commitUnsynced((tx) => {
    if (store.inflight(decisionId))
      throw new Refusal("invalid_request", `decision ${decisionId} is already being handled`);
    const existing = store.instanceByDecision(decisionId);
    if (existing)
      throw new Refusal("invalid_request", `decision ${decisionId} already placed as ${existing.instance_id}`);
    store.insertInflight(tx, {
      decision_id: decisionId,
      method,
      requester: req.requester,
      boot_id: o.bootId,
      started_ms: now,
      revocation_generation: pol0.revocations?.generation ?? -1,
    });
    return { result: null, events: [] };
  });
  ctx.ownsInflight.add(req.nonce);
  // 2. body
  const body = ctx.body("place", req.body);
  // 3. fetch and verify, over this connection (§5.4)
  const fetcher = new PackageFetcher(stream, body.package_id, o.fetchTimeoutMs ?? 30_000);
  const manifest = await fetching(() => fetcher.manifest());
  const pol = ctx.policy.read();
  const verified = verifyParsedEnvelope(parsedManifest(manifest), {
    expectedId: body.package_id,
    trustedSigners: pol.signers,
    revocations: pol.revocations,
  });
  if (!verified.ok) throw new Refusal("verify", verified.error);
  const statement = verified.value.envelope.statement;
  const variant = statement.variants.find((v) => v.id === body.variant);
  if (!variant)
    throw new Refusal("invalid_request", `body.variant ${body.variant} is not a variant of package ${statement.name}`);
  // Issue 12: only what the signed statement declares may be configured, and never a loader or interpreter hook.
  const surface = checkRunConfig(surfaceOf(statement.config), body.config, statement.name);
  if (!surface.ok) throw new Refusal("config_refused", `${surface.error.field}: ${surface.error.reason}`);
  const stored = new Map<string, string>();
  for (const file of statement.files) stored.set(file.path, await fetching(() => o.content.ensure(file, fetcher)));
  // 4. route
  const route = routeFor(variant, {
    arch: archOfNode(process.arch),
    os: process.platform === "darwin" ? "darwin" : "linux",
  });
  if (route === null) throw new Refusal("admission", `no route on this node for variant ${variant.id}`);
  // 5. gate load
  const launch = launchSpec(verified.value.envelope, verified.value.signers, variant, body.config, body.restart);
  const gateCtx = ctx.contextOf(launch, body.package_id, req.requester);
  // Its verdict is chained with the instance row below, or on its own on any path that refuses before that.
  const { verdict: load, event: loadVerdict } = ctx.policy.judge("workload.load", gateCtx);
  const chainLoadVerdictAlone = () => {
    if (loadVerdict) store.append(loadVerdict);
  };
  if (load.decision !== "permit") {
    chainLoadVerdictAlone();
    throw new Refusal("governance", `workload.load denied: ${load.reason}`);
  }
  // The instance row (inserted at step 8, before the in-flight mark is cleared).
  const instanceId = `${body.name}-${sha256(`${decisionId}:${ctx.nodeId}`).toString("hex").slice(0, 12)}`;
  const row: InstanceRow = {
    instance_id: instanceId,
    decision_id: decisionId,
    name: body.name,
    package_id: body.package_id,
    variant: variant.id,
    route,
    state: "loading",
    exit_code: null,
    signal: null,
    detail: null,
    pid: null,
    host_boot_id: null,
    start_marker: null,
    started_ms: null,
    requester: req.requester,
    created_ms: o.clock(),
    launch,
    agent: body.agent ?? null,
    intent: body.intent ?? null,
    generation: 0,
  };
  try {
    // 6. admission
    const admission = admit(launch, {
      instances: store.instanceCount(),
      maxInstances: o.config.max_instances,
      availableMemoryBytes: launch.memory_mb > 0 ? availableMemory() : Number.POSITIVE_INFINITY,
      interpreters: new Set(o.config.interpreters.filter((i) => existsSync(i.path)).map((i) => i.name)),
      provisionedSecrets: new Set(launch.secrets.filter((s) => existsSync(join(o.dataDir, "secrets", s)))),
    });
    if (!admission.ok) throw new Refusal("admission", admission.error);
    // 7. still valid
    if (req.expires_at_ms <= o.clock()) throw new Refusal("expired", "the request expired while it was being handled");
    // 8. insert the instance row
    store.commitUnsynced((tx) => {
      if (store.instance(instanceId)) throw new Refusal("invalid_request", `instance ${instanceId} already exists`);
      store.insertInstance(tx, row);
      return { result: null, events: loadVerdict ? [loadVerdict] : [] };
    });
  } catch (error) {
    chainLoadVerdictAlone();
    throw error;
  }
  // 9. materialise
  try {
    runtime.materialise(
      instanceId,
      statement.files.map((f) => ({
        path: f.path,
        mode: f.mode,
        sha256: f.sha256,
        source: stored.get(f.path) as string,
      })),
    );
  } catch (error) {
    runtime.remove(instanceId);
    const message = (error as Error).message;
    store.commit((tx) => {
      store.removeInstance(tx, instanceId, decisionId, "load failed", o.clock());
      return {
        result: null,
        events: [runtimeEvent("workload.load", row, { outcome: "error", error: truncateUtf8(message, 512) })],
      };
    });
    throw new Refusal("runtime", composeReason("materialise failed: ", message));
  }
  // 10. loaded. A `place` whose start is permitted goes on to `starting` in the same transaction (issue 19: fewer
  // fsynced commits per place; the load is still chained with the state it leads to, and a restart finds a
  // `starting` row with no process as `loaded`, daemon.ts `recover`).
  // The start's gate verdict is chained in that transaction too, after the load (the order it had on its own).
  const judged = method === "place" ? ctx.policy.judge("workload.start", gateCtx) : null;
  const startVerdict = judged?.verdict ?? null;
  const goesOn = startVerdict?.decision === "permit";
  store.commitUnsynced((tx) => {
    store.updateInstance(tx, instanceId, goesOn ? { state: "starting", detail: null } : { state: "loaded" });
    return {
      result: null,
      events: [runtimeEvent("workload.load", row, { outcome: "ok" }), ...(judged?.event ? [judged.event] : [])],
    };
  });
  const placedEvent = (started: boolean): EventDraft => ({
    source: "node",
    kind: "workload.place",
    payload: {
      phase: "placed",
      node: ctx.nodeId,
      requester: req.requester,
      decision_id: decisionId,
      name: body.name,
      package_id: body.package_id,
      variant: variant.id,
      route,
      instance_id: instanceId,
      started,
    },
  });
  // 12 (checked before the in-flight mark is cleared): revoked while it was being placed.
  const revokedSubject = (): string | null => {
    const pol2 = ctx.policy.read();
    return revocationsChanged(pol0.revocations, pol2.revocations) ? revokedSubjectOf(row, pol2.revocations) : null;
  };
  // 11. start, with rollback. `running`, the start, the placement and the cleared in-flight mark commit together
  // unless a revocation arrived meanwhile (then the in-flight mark stays until the teardown below).
  let started = false;
  let cleared = false;
  let identity: ProcessIdentity | null = null;
  if (startVerdict !== null) {
    if (!goesOn) {
      throw await rollback(ctx, row, "governance", `governance: workload.start denied: ${startVerdict.reason}`, null);
    }
    try {
      identity = await spawnInstance(ctx, row, {
        startingCommitted: true,
        alsoOnRunning: (tx) => {
          if (revokedSubject() !== null) return [];
          store.deleteInflight(tx, decisionId);
          cleared = true;
          return [placedEvent(true)];
        },
      });
      started = true;
    } catch (error) {
      throw await rollback(ctx, row, "runtime", (error as Error).message, null);
    }
  }
  // 12.
  const subject = cleared ? null : revokedSubject();
  if (subject !== null) {
    await forcedTeardown(ctx, store.instance(instanceId) ?? row, subject);
    throw new Refusal("governance", "revoked while it was being placed");
  }
  // 13. placed; clear in-flight (already done with `running` for a started place)
  const final = store.instance(instanceId) as InstanceRow;
  if (!cleared) {
    store.commit((tx) => {
      store.deleteInflight(tx, decisionId);
      return { result: null, events: [placedEvent(started)] };
    });
  }
  ctx.ownsInflight.delete(req.nonce);
  ctx.log.info(
    { method, decision_id: decisionId, name: body.name, package_id: body.package_id, instance_id: instanceId, started },
    "instance placed",
  );
  // 14.
  return {
    instance_id: instanceId,
    name: body.name,
    variant: variant.id,
    route,
    package_id: body.package_id,
    state: final.state,
    pid: identity?.pid ?? null,
    node_id: ctx.nodeId,
    generation: final.generation,
  };
}

/**
 * §5.4 step 2 for the manifest text just fetched, reusing the parse of the previous place when the text is the same
 * (issue 19: the parse was a third of the verification). Steps 3–5 (the id, the signatures under this node's signers
 * now, the revocations now) run on every place; only a parse, which depends on the text alone, is kept.
 */
const manifests = new ParseMemo<ParsedEnvelope>();
function parsedManifest(text: string): ParsedEnvelope {
  return manifests.get("manifest", text, parseEnvelope);
}

async function fetching<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof FetchFailure) throw new Refusal(error.code, error.message);
    throw new Refusal("fetch", (error as Error).message);
  }
}

function launchSpec(
  envelope: Envelope,
  signers: readonly string[],
  variant: Variant,
  config: BodyOf<"place">["config"],
  restart: BodyOf<"place">["restart"],
): LaunchSpec {
  const s = envelope.statement;
  return {
    program: variant.entry.program,
    args: [...variant.entry.args, ...config.args],
    env: { ...config.env },
    mode: config.mode,
    kind: s.kind,
    network: s.network,
    secrets: [...s.secrets],
    cpu_millis: s.resources.cpu_millis,
    memory_mb: s.resources.memory_mb,
    signer_keys: [...signers],
    file_hashes: s.files.map((f) => f.sha256),
    restart,
    health: s.health,
  };
}

/** §11.1 step 11: undo a load whose start failed. Returns the refusal to answer with. */
async function rollback(
  ctx: NodeContext,
  row: InstanceRow,
  code: RefusalCode,
  error: string,
  identity: ProcessIdentity | null,
): Promise<Refusal> {
  const { store, runtime } = ctx;
  let unloadError: string | null = null;
  try {
    if (identity) {
      const stopped = await runtime.stop(row.instance_id, identity, 2000);
      if (!stopped.stopped) unloadError = "the process group did not exit";
    }
    if (unloadError === null) {
      const verdict = ctx.policy.gate("workload.unload", ctx.contextOf(row.launch, row.package_id, row.requester));
      if (verdict.decision !== "permit") unloadError = `governance: workload.unload denied: ${verdict.reason}`;
    }
    if (unloadError === null) {
      runtime.remove(row.instance_id);
      store.commit((tx) => {
        store.removeInstance(tx, row.instance_id, row.decision_id, "rolled back", ctx.o.clock());
        return { result: null, events: [runtimeEvent("workload.unload", row, { outcome: "ok", rollback: true })] };
      });
    }
  } catch (e) {
    unloadError = (e as Error).message;
  }
  if (unloadError !== null) {
    const why = unloadError;
    store.commit((tx) => {
      store.updateInstance(tx, row.instance_id, {
        state: "failed",
        detail: truncateUtf8(`start failed; rollback unload failed: ${why}`, 1024),
      });
      return {
        result: null,
        events: [
          runtimeEvent("workload.unload", row, { outcome: "error", rollback: true, error: truncateUtf8(why, 512) }),
        ],
      };
    });
    return new Refusal(
      code,
      composeReason(
        "start failed: ",
        error,
        `; unload of ${row.instance_id} failed too (${truncateUtf8(why, 256)}), it stays listed`,
      ),
    );
  }
  return new Refusal(code, composeReason("start failed: ", error, `; loaded instance ${row.instance_id} unloaded`));
}
