/** The audit chains: list, events after a seq, verify, export as JSON lines (as `berth audit tail|verify|export`). */
import type { z } from "zod";
import { exportChainLines, findEvents, verifyStoredChain } from "../../chain/chain.js";
import { chainHead } from "../../chain/read.js";
import type { Inputs } from "../contract.js";
import { absentChainHint, CHAIN_NAMES, type ChainName, headSeq, type OpenChain, openChainReader } from "../chains.js";
import { notFound } from "../errors.js";
import type { CallContext, Handlers } from "../handler.js";

async function withChain<T>(ctx: CallContext, name: ChainName, fn: (c: OpenChain) => T): Promise<T> {
  if (name === "controller") await ctx.state.refreshChains();
  const c = openChainReader(ctx.state, name);
  if (c === null) throw notFound(`the ${name} chain`, absentChainHint(ctx.state, name));
  try {
    return fn(c);
  } finally {
    c.close();
  }
}

export const auditHandlers: Handlers = {
  listChains: async (_i, ctx) => {
    await ctx.state.refreshChains();
    const chains = [];
    for (const name of CHAIN_NAMES) {
      const c = openChainReader(ctx.state, name);
      if (c === null) continue;
      try {
        const head = chainHead(c.db, c.chainId);
        chains.push({ name, chain_id: c.chainId, owner_key: c.ownerKey, role: c.role, events: c.events, head });
      } finally {
        c.close();
      }
    }
    return { body: { chains } };
  },
  auditEvents: async (i, ctx) => {
    const q = i.query as z.infer<typeof Inputs.auditEventsQuery>;
    return withChain(ctx, q.chain, (c) => {
      const events = [];
      for (const e of findEvents(c.db, c.chainId, { fromSeq: q.after + 1, toSeq: q.after + q.limit })) events.push(e);
      return { body: { chain: q.chain, events, head: headSeq(c.db, c.chainId) } };
    });
  },
  auditVerify: async (i, ctx) => {
    const q = i.query as z.infer<typeof Inputs.auditChainQuery>;
    return withChain(ctx, q.chain, (c) => ({ body: verifyStoredChain(c.db, c.chainId, { key: c.ownerKey }) }));
  },
  auditExport: async (i, ctx) => {
    const q = i.query as z.infer<typeof Inputs.auditChainQuery>;
    return withChain(ctx, q.chain, (c) => {
      let text = "";
      for (const line of exportChainLines(c.db, c.chainId, 0, Number.MAX_SAFE_INTEGER)) text += `${line}\n`;
      return { body: text };
    });
  },
};
