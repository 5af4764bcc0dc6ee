/**
 * `describe` (spec/mesh.md §6): the node's identity, methods and signed facts, with the facts sequence moved on by one
 * (committed before the answer, so two answers never share a sequence number).
 *
 * A describe names no boot (it is how a controller learns the boot id), so the boot id cannot refuse its replay after
 * a restart the way it refuses every other method's (§4.6 check 8). Its nonce is therefore kept in node.db until the
 * request expires, in the transaction that moves the facts sequence, and the daemon seeds its replay guard with the
 * unexpired ones at start (issue 12: a captured describe was answered again after a node restart).
 */
import { existsSync } from "node:fs";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { METHODS } from "../../core/protocol/messages.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import type { NodeContext } from "./context.js";
import { buildFacts, signFacts } from "./facts.js";
import type { NodeStore } from "./store.js";

const DESCRIBE_NONCES = "describe_nonces";

/** The unexpired describe nonces kept in node.db, nonce → the request's expiry (ms). */
export function persistedDescribeNonces(store: NodeStore, nowMs: number): Map<string, number> {
  let raw: unknown;
  try {
    raw = JSON.parse(store.meta(DESCRIBE_NONCES) ?? "{}");
  } catch {
    raw = {};
  }
  const kept = new Map<string, number>();
  if (raw !== null && typeof raw === "object") {
    for (const [nonce, expires] of Object.entries(raw)) if (typeof expires === "number" && expires > nowMs) kept.set(nonce, expires);
  }
  return kept;
}

export function describe(ctx: NodeContext, req: VerifiedRequest): JsonObject {
  const { o, store } = ctx;
  const now = o.clock();
  const seq = store.commit((tx) => {
    const next = Number(store.meta("facts_seq") ?? "0") + 1;
    store.setMeta(tx, "facts_seq", String(next));
    const nonces = persistedDescribeNonces(store, now);
    nonces.set(req.nonce, req.expires_at_ms);
    store.setMeta(tx, DESCRIBE_NONCES, JSON.stringify(Object.fromEntries(nonces)));
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
    leaseMs: o.config.lease_ms,
    containment: ctx.runtime.confinement.facts(),
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
