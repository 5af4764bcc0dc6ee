/**
 * `describe` (spec/mesh.md §6): the node's identity, methods and signed facts, with the facts sequence moved on by one
 * (committed before the answer, so two answers never share a sequence number).
 */
import { existsSync } from "node:fs";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { METHODS } from "../../core/protocol/messages.js";
import type { NodeContext } from "./context.js";
import { buildFacts, signFacts } from "./facts.js";

export function describe(ctx: NodeContext): JsonObject {
  const { o, store } = ctx;
  const now = o.clock();
  const seq = store.commit((tx) => {
    const next = Number(store.meta("facts_seq") ?? "0") + 1;
    store.setMeta(tx, "facts_seq", String(next));
    return { result: next, events: [] };
  });
  const facts = buildFacts({
    nodeId: ctx.nodeId,
    bootId: o.bootId,
    seq,
    nowMs: now,
    ttlS: o.config.facts_ttl_s,
    name: o.config.name,
    board: o.config.board ?? "generic",
    labels: o.config.labels,
    interpreters: o.config.interpreters.filter((i) => existsSync(i.path)),
    perf: o.perf ?? [],
    instances: store.instances().length,
  });
  return {
    node_id: ctx.nodeId,
    boot_id: o.bootId,
    version: o.version,
    methods: [...METHODS],
    facts: signFacts(o.key, facts) as unknown as JsonObject,
    clock_ms: now,
  };
}
