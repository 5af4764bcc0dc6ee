/**
 * The Merkle routes of the controller chain (contract-tlog.ts, issue 38): proofs as self-contained documents (each
 * with the checkpoint note the server's key signs over the tree it names) and the C2SP tlog tiles. Read through a
 * fresh read-only connection per call (chains.ts), so what another process appended is seen at once.
 *
 * A note is signed here for any size the chain holds: "the first N events of my chain have root R" is true of every
 * prefix, and Ed25519 is deterministic, so every server on one store signs the same note for the same N.
 */
import type { z } from "zod";
import { StoredChainTree } from "../../chain/tree-reader.js";
import { checkpointOrigin, signCheckpointNote } from "../../core/chain/note.js";
import { entryBundle, parseTilePath, tileBytes, tileLeafRange, treeHasTile } from "../../core/chain/tlog-tiles.js";
import { absentChainHint, type OpenChain, openChainReader } from "../chains.js";
import type { TlogInputs } from "../contract-tlog.js";
import { ApiError, notFound } from "../errors.js";
import type { CallContext, Handlers } from "../handler.js";

type In<T extends z.ZodType> = z.infer<T>;
const b64 = (h: Buffer) => h.toString("base64");

async function withTree<T>(ctx: CallContext, fn: (tree: StoredChainTree, c: OpenChain) => T): Promise<T> {
  await ctx.state.refreshChains();
  const c = openChainReader(ctx.state, "controller");
  if (c === null) throw notFound("the controller chain", absentChainHint(ctx.state, "controller"));
  try {
    if (c.ownerKey !== ctx.state.key.publicKey) {
      throw new ApiError(
        409,
        "chain_key",
        `the controller chain is owned by key ${c.ownerKey}, not this server's ${ctx.state.key.publicKey}; its notes cannot be signed here`,
      );
    }
    return fn(new StoredChainTree(c.db, c.chainId), c);
  } finally {
    c.close();
  }
}

/** 400 naming the query field, for a size the chain does not hold (what the schema cannot know). */
function outOfRange(field: string, message: string): ApiError {
  return new ApiError(400, "invalid_request", `query.${field}: ${message}`, {
    issues: [{ path: `query.${field}`, message }],
  });
}

export const tlogHandlers: Handlers = {
  auditProofInclusion: async (i, ctx) => {
    const q = i.query as In<typeof TlogInputs.inclusionQuery>;
    return withTree(ctx, (tree) => {
      const n = tree.size();
      const size = q.size ?? n;
      if (size > n) throw outOfRange("size", `the chain holds ${n} events; a tree of ${size} does not exist yet`);
      if (q.seq >= size) throw outOfRange("seq", `must be below the tree size ${size} (seq 0..${size - 1})`);
      const root = tree.root(size);
      const origin = checkpointOrigin(tree.chainId);
      const [eventHash] = tree.eventHashes(q.seq, 1) as [string];
      return {
        body: {
          kind: "inclusion",
          chain_id: tree.chainId,
          origin,
          tree_size: size,
          root: b64(root),
          leaf_index: q.seq,
          event_hash: eventHash,
          path: tree.inclusion(q.seq, size).map(b64),
          note: signCheckpointNote(ctx.state.key, { origin, size, root }),
        },
      };
    });
  },
  auditProofConsistency: async (i, ctx) => {
    const q = i.query as In<typeof TlogInputs.consistencyQuery>;
    return withTree(ctx, (tree) => {
      const n = tree.size();
      const newSize = q.new ?? n;
      if (newSize > n) throw outOfRange("new", `the chain holds ${n} events; a tree of ${newSize} does not exist yet`);
      if (q.old > newSize) throw outOfRange("old", `must not be larger than the newer tree size ${newSize}`);
      const origin = checkpointOrigin(tree.chainId);
      const head = (size: number) => {
        const root = tree.root(size);
        return { tree_size: size, root: b64(root), note: signCheckpointNote(ctx.state.key, { origin, size, root }) };
      };
      return {
        body: {
          kind: "consistency",
          chain_id: tree.chainId,
          origin,
          old: head(q.old),
          new: head(newSize),
          proof: tree.consistency(q.old, newSize).map(b64),
        },
      };
    });
  },
  tlogCheckpoint: async (_i, ctx) =>
    withTree(ctx, (tree) => {
      const size = tree.checkpointSize();
      if (size === null)
        throw notFound(
          "a checkpoint of the controller chain",
          "one is chained every 1000 events, every 600 s with new events, and by `berth audit checkpoint`",
        );
      return {
        body: signCheckpointNote(ctx.state.key, {
          origin: checkpointOrigin(tree.chainId),
          size,
          root: tree.root(size),
        }),
      };
    }),
  tlogTile: async (i, ctx) => {
    const p = i.params as In<typeof TlogInputs.tile>;
    const parsed = parseTilePath(p.tile);
    if (!parsed.ok)
      throw new ApiError(400, "invalid_request", `params.tile: ${parsed.error}`, {
        issues: [{ path: "params.tile", message: parsed.error }],
      });
    const t = parsed.value;
    return withTree(ctx, (tree) => {
      if (!treeHasTile(tree.size(), t))
        throw notFound(
          `tile ${p.tile}`,
          "the tree does not hold all of its hashes yet (a partial tile has a smaller .p/<W>)",
        );
      if (t.level === "entries") {
        const { start, count } = tileLeafRange(t);
        return { body: entryBundle(tree.eventHashes(start, count)) };
      }
      return { body: tileBytes(tree.read, { ...t, level: t.level }) };
    });
  },
};
