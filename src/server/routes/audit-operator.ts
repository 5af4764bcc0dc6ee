/**
 * The audit verbs beyond plain reading, over HTTP (contract-operator.ts): `berth audit verify` with a pinned key,
 * checkpoints and an expected head; `export --checkpoints`; `checkpoint` (signed by the server's own key, on the chain
 * its controller holds open); `import` of an exported chain as a foreign copy. The server verifies and answers; an
 * exported chain can still be verified offline (`berth audit verify --file`).
 */
import type { z } from "zod";
import { storedCheckpoints, verifyStoredChain } from "../../chain/chain.js";
import { importChainOn } from "../../chain/import.js";
import type { SignedCheckpoint } from "../../core/chain/checkpoint.js";
import { absentChainHint, type ChainName, type OpenChain, openChainReader } from "../chains.js";
import type { OperatorInputs } from "../contract-operator.js";
import { ApiError, notFound } from "../errors.js";
import type { CallContext, Handlers } from "../handler.js";

type In<T extends z.ZodType> = z.infer<T>;

function withChain<T>(ctx: CallContext, name: ChainName, fn: (c: OpenChain) => T): T {
  const c = openChainReader(ctx.state, name);
  if (c === null) throw notFound(`the ${name} chain`, absentChainHint(ctx.state, name));
  try {
    return fn(c);
  } finally {
    c.close();
  }
}

export const auditOperatorHandlers: Handlers = {
  auditVerifyPinned: async (i, ctx) => {
    const b = i.body as In<typeof OperatorInputs.verifyPinned>;
    return withChain(ctx, b.chain, (c) => ({
      body: verifyStoredChain(c.db, c.chainId, {
        ...(b.key ? { key: b.key } : {}),
        checkpoints: b.checkpoints as SignedCheckpoint[],
        ...(b.expect_head ? { expectHead: b.expect_head } : {}),
      }),
    }));
  },
  auditCheckpoints: async (i, ctx) => {
    const q = i.query as In<typeof OperatorInputs.checkpointsQuery>;
    return withChain(ctx, q.chain, (c) => {
      // Field order as `berth audit export --checkpoints` writes each line (the same reader), so both print the same bytes.
      const checkpoints = storedCheckpoints(c.db, c.chainId, c.ownerKey);
      return { body: { chain: q.chain, chain_id: c.chainId, checkpoints } };
    });
  },
  auditCheckpoint: async (_i, ctx) => {
    const cp = await ctx.state.controller.store.chain.checkpointIfDue(true);
    return {
      body: { checkpoint: cp ?? null },
      ...(cp ? { refs: { seq: cp.checkpoint.seq, head_hash: cp.checkpoint.head_hash } } : {}),
    };
  },
  auditImport: async (i, ctx) => {
    const b = i.body as In<typeof OperatorInputs.importChain>;
    // Into the controller's store, beside its own chain, on whichever engine it is (issue 20: on PostgreSQL too, not
    // into a controller.db file the server does not use).
    const outcome = await importChainOn(ctx.state.controller.store.engine, b.lines, b.key ? { key: b.key } : {});
    if (!outcome.ok) throw new ApiError(422, "import_refused", `import refused, nothing written: ${outcome.error}`);
    await ctx.state.refreshChains();
    const { chain_id, written } = outcome.value;
    return { body: { ok: true, chain_id, written }, refs: { chain_id, written } };
  },
};
