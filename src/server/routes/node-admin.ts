/**
 * `POST /nodes/{ref}/cordon|uncordon|forget|drain` (issue 16) and `/remove` (issue 36): thin shells over src/mesh/controller/node-admin.ts, the
 * same calls `berth node …` makes on its own files. The operator chained is the token's identity, with what the CLI
 * says of who ran it beside it.
 */
import type { z } from "zod";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { cordonNode, drainNode, forgetNode, removeNode } from "../../mesh/controller/node-admin.js";
import type { Inputs } from "../contract.js";
import { ApiError, notFound } from "../errors.js";
import type { CallContext, Handlers, Parsed } from "../handler.js";

type In<T extends z.ZodType> = z.infer<T>;

function operatorOf(i: Parsed, ctx: CallContext, verb: string): JsonObject {
  const b = i.body as In<typeof Inputs.nodeAdmin>;
  return {
    via: `api (${verb})`,
    token: ctx.caller.who,
    remote: ctx.caller.remote,
    ...(b.operator ? { claimed: { ...b.operator } } : {}),
  };
}

/** A 404 in the API's words, carrying the controller's own reason for the CLI to print as it does locally (issue 36). */
function unknownNode(ref: string, reason: string): ApiError {
  const e = notFound(`node ${ref}`, "GET /api/v1/nodes lists the known ones");
  return new ApiError(e.status, e.code, e.message, { failure: { kind: "node_admin", message: reason } });
}

function known<T extends object>(r: T | { readonly error: string }, ref: string): T {
  if ("error" in r) throw unknownNode(ref, r.error);
  return r;
}

const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

export const nodeAdminHandlers: Handlers = {
  cordonNode: async (i, ctx) => {
    const { ref } = i.params as In<typeof Inputs.nodeRef>;
    const b = i.body as In<typeof Inputs.nodeAdmin>;
    const r = known(
      await cordonNode(
        await ctx.state.controller.nodeAdmin(),
        ref,
        true,
        b.reason,
        operatorOf(i, ctx, "berth node cordon"),
      ),
      ref,
    );
    return { body: { ...r }, refs: { node_id: r.node } };
  },
  uncordonNode: async (i, ctx) => {
    const { ref } = i.params as In<typeof Inputs.nodeRef>;
    const b = i.body as In<typeof Inputs.nodeAdmin>;
    const r = known(
      await cordonNode(
        await ctx.state.controller.nodeAdmin(),
        ref,
        false,
        b.reason,
        operatorOf(i, ctx, "berth node uncordon"),
      ),
      ref,
    );
    return { body: { ...r }, refs: { node_id: r.node } };
  },
  forgetNode: async (i, ctx) => {
    const { ref } = i.params as In<typeof Inputs.nodeRef>;
    const b = i.body as In<typeof Inputs.nodeAdmin>;
    const r = known(
      await forgetNode(await ctx.state.controller.nodeAdmin(), ref, b.reason, operatorOf(i, ctx, "berth node forget")),
      ref,
    );
    return {
      body: { node: r.node, released: r.released.map((x) => ({ ...x })), decisions: [...r.decisions] },
      refs: { node_id: r.node, released: r.released.length },
    };
  },
  removeNode: async (i, ctx) => {
    const { ref } = i.params as In<typeof Inputs.nodeRef>;
    const b = i.body as In<typeof Inputs.nodeAdmin>;
    const r = await removeNode(
      await ctx.state.controller.nodeAdmin(),
      ref,
      b.reason,
      operatorOf(i, ctx, "berth nodes remove"),
    );
    if ("error" in r) {
      if (r.refused !== true) throw unknownNode(ref, r.error);
      return {
        status: 409,
        body: {
          error: { code: "node_not_removable", message: r.error, failure: { kind: "node_admin", message: r.error } },
        },
        error: "node_not_removable",
      };
    }
    return { body: { ...r }, refs: { node_id: r.node } };
  },
  drainNode: async (i, ctx) => {
    const { ref } = i.params as In<typeof Inputs.nodeRef>;
    const b = i.body as In<typeof Inputs.nodeAdmin>;
    const deps = await ctx.state.controller.nodeAdmin();
    const r = await drainNode(deps, ref, b.reason, operatorOf(i, ctx, "berth node drain"), sleep);
    if ("error" in r) {
      if (r.error.startsWith("no known node")) throw unknownNode(ref, r.error);
      return {
        status: 502,
        body: {
          error: { code: "node_unreachable", message: r.error, failure: { kind: "node_admin", message: r.error } },
        },
        error: "node_unreachable",
      };
    }
    return {
      body: { node: r.node, steps: r.steps.map((s) => ({ ...s })) },
      refs: { node_id: r.node, moved: r.steps.filter((s) => s.outcome === "moved").length },
    };
  },
};
