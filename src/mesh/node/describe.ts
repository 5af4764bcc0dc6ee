/**
 * `describe` (spec/mesh.md §6): the node's identity, methods and signed facts, each answer with a facts sequence number
 * higher than every earlier one, across restarts too.
 *
 * A describe names no boot (it is how a controller learns the boot id), so the boot id cannot refuse its replay after
 * a restart the way it refuses every other method's (§4.6 check 8). Its nonce is therefore kept in node.db until the
 * request expires, and the daemon seeds its replay guard with the unexpired ones at start (issue 12: a captured
 * describe was answered again after a node restart).
 *
 * Issue 19: a describe that changes nothing costs the node no wait for the disk. The sequence is reserved in blocks
 * (`facts_seq` holds the highest number reserved; a daemon starts above it), so only one describe in
 * FACTS_SEQ_BLOCK writes it, synced before that answer. The nonce is committed without a sync of its own when every
 * request arrives over TLS: the commit survives a daemon restart (the case issue 12 found), and across a host crash a
 * captured TLS request cannot be replayed at all (it was never readable, and a new session has new keys). Over
 * plaintext the nonce is synced before the answer, as before.
 */
import { existsSync } from "node:fs";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { METHODS } from "../../core/protocol/messages.js";
import type { VerifiedRequest } from "../../core/protocol/verify.js";
import type { NodeContext } from "./context.js";
import { buildFacts, signFacts } from "./facts.js";
import type { WriteTx } from "../../store/sqlite.js";
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
    for (const [nonce, expires] of Object.entries(raw))
      if (typeof expires === "number" && expires > nowMs) kept.set(nonce, expires);
  }
  return kept;
}

/** How many facts sequence numbers one durable write reserves. */
export const FACTS_SEQ_BLOCK = 1024;

/** Per node store: the next number to hand out and the highest one reserved on disk. */
const sequences = new WeakMap<NodeStore, { next: number; reserved: number }>();

export function describe(ctx: NodeContext, req: VerifiedRequest): JsonObject {
  const { o, store } = ctx;
  const now = o.clock();
  let s = sequences.get(store);
  if (!s) {
    // A fresh start continues above everything an earlier boot reserved, whether it handed it out or not.
    const reserved = Number(store.meta("facts_seq") ?? "0");
    s = { next: reserved + 1, reserved };
    sequences.set(store, s);
  }
  const seq = s.next;
  const reserve = seq > s.reserved;
  const write = (tx: WriteTx) => {
    if (reserve) store.setMeta(tx, "facts_seq", String(seq + FACTS_SEQ_BLOCK - 1));
    const nonces = persistedDescribeNonces(store, now);
    nonces.set(req.nonce, req.expires_at_ms);
    store.setMeta(tx, DESCRIBE_NONCES, JSON.stringify(Object.fromEntries(nonces)));
    return { result: null, events: [] };
  };
  if (reserve || o.transport !== "tls") store.commit(write);
  else store.commitUnsynced(write);
  s.next = seq + 1;
  if (reserve) s.reserved = seq + FACTS_SEQ_BLOCK - 1;
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
    instances: store.instanceCount(),
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
