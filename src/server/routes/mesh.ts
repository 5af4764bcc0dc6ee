/**
 * Nodes, packages, placements, instances and unsettled decisions: thin shells over `MeshController`, the way
 * `src/cli/mesh.ts` calls it. No decision lives here.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { z } from "zod";
import { agentLabels } from "../../agents/index.js";
import { instanceAgent, parseSelector, rowsOfSelectedAgents } from "../../core/agents/labels.js";
import { renderExplain } from "../../core/placement/explain.js";
import type { PlacementDecision } from "../../core/placement/index.js";
import { PlaceError, type TargetInfo, type VerbResult } from "../../mesh/controller/index.js";
import { PACKAGE_STORE, storedPackageDir } from "../../mesh/controller/prepare.js";
import { instancesWithState, targetsSelected, targetsWithFacts } from "../../mesh/controller/views.js";
import { readEnvelope } from "../../mesh/packages/dir.js";
import type { Inputs } from "../contract.js";
import { agentsEnv } from "./agents.js";
import { ApiError, notFound } from "../errors.js";
import type { Answer, CallContext, Handlers, Parsed } from "../handler.js";

type In<T extends z.ZodType> = z.infer<T>;

const withFacts = (ctx: CallContext, targets: readonly TargetInfo[]) => targetsWithFacts(ctx.state.controller, targets);

/** A verb's answer as HTTP: the VerbResult document always, with a status saying who failed. */
function verbAnswer(r: VerbResult): Answer {
  const refs = { instance_id: r.instance_id, result: r.kind };
  switch (r.kind) {
    case "ok":
      return { body: r, refs };
    case "refused":
      return { status: 409, body: r, refs, error: `refused_${r.code}` };
    case "unreachable":
    case "indeterminate":
      return { status: 502, body: r, refs, error: r.kind };
    case "error":
      if (r.code === "unknown_instance")
        throw notFound(`instance ${r.instance_id}`, "GET /api/v1/instances lists the placed ones");
      return { status: r.code === "unreachable" ? 502 : 409, body: r, refs, error: r.code };
    default: {
      const never: never = r;
      return never;
    }
  }
}

async function place(i: Parsed, ctx: CallContext, dryRun: boolean): Promise<Answer> {
  const order = i.body as In<typeof Inputs.place>;
  // The route's api.call request rides its first write (contract.ts recordRides); a package named by a path is
  // copied into the package store first, a file written outside any transaction, so the request commits before.
  if (storedPackageDir(order.package, ctx.state.dataDir) === null) await ctx.commitRequest();
  try {
    const report = await ctx.state.controller.place({ ...order, dry_run: dryRun });
    return {
      status: dryRun ? 200 : 201,
      body: report,
      refs: { decision_id: report.decision_id, instance_id: report.placed?.instance_id ?? null },
    };
  } catch (error) {
    if (!(error instanceof PlaceError)) throw error;
    // Issue 37 finding A: the store failed mid-dispatch; the decision was handed to settle (or will be): retryable.
    const status =
      error.code === "name_taken"
        ? 409
        : error.code === "invalid_order"
          ? 400
          : error.code === "store_interrupted"
            ? 503
            : 422;
    throw new ApiError(
      status,
      error.code,
      error.message,
      error.constraints.length > 0 ? { constraints: error.constraints } : {},
    );
  }
}

function listPackages(dataDir: string) {
  const root = join(dataDir, PACKAGE_STORE);
  let names: string[];
  try {
    names = readdirSync(root).filter((n) => /^[0-9a-f]{64}$/.test(n));
  } catch {
    return [];
  }
  return names.sort().map((id) => {
    const path = join(root, id);
    try {
      const { envelope, packageId } = readEnvelope(path);
      const s = envelope.statement;
      return {
        package_id: packageId,
        name: s.name,
        version: s.version,
        kind: s.kind,
        description: s.description,
        path,
        variants: s.variants.map((v) => ({ id: v.id, arch: v.arch, os: v.os })),
        signers: envelope.signatures.map((x) => x.key),
        // The store holds only copies the controller verified when it took them in.
        verified: packageId === id,
        error: packageId === id ? null : `the manifest's id is ${packageId}, not the directory's name`,
      };
    } catch (error) {
      return {
        package_id: id,
        name: "",
        version: "",
        kind: "",
        description: "",
        path,
        variants: [],
        signers: [],
        verified: false,
        error: (error as Error).message,
      };
    }
  });
}

export const meshHandlers: Handlers = {
  listNodes: async (i, ctx) => {
    const q = i.query as In<typeof Inputs.nodesQuery>;
    const c = ctx.state.controller;
    const parsed = parseSelector(q.labelSelector ?? "");
    if (!parsed.ok)
      throw new ApiError(400, "invalid_request", `query.labelSelector: ${parsed.error}`, {
        issues: [{ path: "query.labelSelector", message: parsed.error }],
      });
    // A node's labels come with its signed facts: a selector describes every node first, so none is judged on none.
    const targets = q.refresh === "true" || parsed.value.length > 0 ? await c.refreshTargets() : await c.targets();
    return { body: { nodes: targetsSelected(await withFacts(ctx, targets), parsed.value) } };
  },
  addNode: async (i, ctx) => {
    const b = i.body as In<typeof Inputs.addNode>;
    const r = await ctx.state.controller.addTarget(b.addr, b.tier ?? null, b.key ?? null);
    if (!r.ok) throw new ApiError(422, "node_not_added", r.error);
    return { status: 201, body: { node: (await withFacts(ctx, [r.value]))[0] }, refs: { node_id: r.value.node_id } };
  },
  setNodeTier: async (i, ctx) => {
    const p = i.params as In<typeof Inputs.nodeRef>;
    const b = i.body as In<typeof Inputs.setTier>;
    await ctx.state.controller.targets(); // re-reads what the CLI may have added
    if (!(await ctx.state.controller.setTier(p.ref, b.tier)))
      throw notFound(`node ${p.ref}`, "add it first with POST /api/v1/nodes");
    return { body: { node: p.ref, tier: b.tier } };
  },

  listPackages: async (_i, ctx) => ({ body: { packages: listPackages(ctx.state.dataDir) } }),
  addPackage: async (i, ctx) => {
    const b = i.body as In<typeof Inputs.addPackage>;
    const r = await ctx.state.controller.registerPackage(b.path);
    if (!r.ok) throw new ApiError(422, "package_refused", r.error);
    const s = r.value.statement;
    return {
      status: 201,
      body: {
        package_id: r.value.packageId,
        name: s.name,
        version: s.version,
        path: join(ctx.state.dataDir, PACKAGE_STORE, r.value.packageId),
      },
      refs: { package_id: r.value.packageId },
    };
  },

  listPlacements: async (_i, ctx) => ({ body: { placements: await ctx.state.controller.placements() } }),
  place: (i, ctx) => place(i, ctx, false),
  explain: (i, ctx) => place(i, ctx, true),
  getPlacement: async (i, ctx) => {
    const { decision_id } = i.params as In<typeof Inputs.decisionRef>;
    const c = ctx.state.controller;
    const event = await c.store.decisionEvent(decision_id);
    if (event?.kind !== "workload.place" || event.payload.phase !== "decision")
      throw notFound(`decision ${decision_id}`, "its id is the decision_id of a PlaceReport or a placement record");
    // Issue 35: the candidate reports live beside the chain; put back, the answer is the decision the engine made.
    const chained = await c.store.chainedDecision(event);
    if (!chained.ok) throw new ApiError(500, "internal", `decision ${decision_id}: ${chained.error}`);
    const decision = chained.value as unknown as PlacementDecision;
    const row = await c.store.decision(decision_id);
    const dryRun = event.payload.dry_run === true;
    return {
      body: {
        decision_id,
        state: row?.state ?? (dryRun ? "dry_run" : "unplaced"),
        name: String(event.payload.name),
        package_id: String(event.payload.package_id),
        created_ms: row?.created_ms ?? event.ts,
        dry_run: dryRun,
        decision,
        explain: renderExplain(decision, { decision_id }),
        attempts: await c.store.attempts(decision_id),
      },
    };
  },

  listInstances: async (i, ctx) => {
    const { labelSelector } = i.query as In<typeof Inputs.labelQuery>;
    const parsed = parseSelector(labelSelector ?? "");
    if (!parsed.ok)
      throw new ApiError(400, "invalid_request", `query.labelSelector: ${parsed.error}`, {
        issues: [{ path: "query.labelSelector", message: parsed.error }],
      });
    const rows = await instancesWithState(ctx.state.controller, ctx.state.client);
    if (parsed.value.length === 0) return { body: { instances: rows } };
    const labels = await agentLabels(agentsEnv(ctx.state));
    return { body: { instances: rowsOfSelectedAgents(rows, parsed.value, instanceAgent, labels) } };
  },
  listMoved: async (_i, ctx) => ({
    body: { moved: (await ctx.state.controller.moves.moved()).map((m) => ({ ...m })) },
  }),
  getInstance: async (i, ctx) =>
    verbAnswer(await ctx.state.controller.instance("status", (i.params as In<typeof Inputs.instanceRef>).id)),
  startInstance: async (i, ctx) =>
    verbAnswer(await ctx.state.controller.instance("start", (i.params as In<typeof Inputs.instanceRef>).id)),
  stopInstance: async (i, ctx) => {
    const b = i.body as In<typeof Inputs.instanceVerb>;
    return verbAnswer(
      await ctx.state.controller.instance(
        "stop",
        (i.params as In<typeof Inputs.instanceRef>).id,
        b.grace_ms === undefined ? {} : { grace_ms: b.grace_ms },
      ),
    );
  },
  unloadInstance: async (i, ctx) => {
    const b = i.body as In<typeof Inputs.instanceVerb>;
    return verbAnswer(
      await ctx.state.controller.instance(
        "unload",
        (i.params as In<typeof Inputs.instanceRef>).id,
        b.purge === true ? { purge: true } : {},
      ),
    );
  },
  instanceLogs: async (i, ctx) => {
    const q = i.query as In<typeof Inputs.logsQuery>;
    return verbAnswer(
      await ctx.state.controller.instance("logs", (i.params as In<typeof Inputs.instanceRef>).id, {
        tail_bytes: q.tail_bytes ?? 65_536,
      }),
    );
  },

  listUnsettled: async (_i, ctx) => ({ body: { unsettled: await ctx.state.controller.unsettled() } }),
  settle: async (_i, ctx) => {
    const settled = await ctx.state.controller.settleReport();
    return {
      body: { settled, unsettled: await ctx.state.controller.unsettled() },
      refs: { adopted: settled.adopted, released: settled.settledEmpty },
    };
  },
};
