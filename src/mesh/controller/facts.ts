/**
 * Accepting a node's facts (spec/mesh.md §6.2). The client has already checked that the facts are signed by the key that
 * answered the describe and name the same node and boot; this adds the rules that need the controller's clock and
 * its cache: ttl range, freshness, clock lead, `seq` never going backwards, and no self-asserted trust (a node can
 * never raise its own tier: a `trust.*` capability or a `berth.io/tier*` label rejects the facts whole).
 * Rejected facts are dropped whole, so the engine sees the target without facts and rejects it under
 * `facts_expired`.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import { type NodeFacts, nodeFactsSchema } from "../../core/placement/index.js";

export type FactsVerdict =
  | { readonly kind: "accepted"; readonly facts: NodeFacts; readonly seq: number; readonly expireAtMs: number }
  /** A lower seq than the cached facts: ignored, but the answer still counts for liveness. */
  | { readonly kind: "stale" }
  | { readonly kind: "rejected"; readonly reason: string };

const CLOCK_LEAD_MS = 30_000;

export function acceptFacts(raw: JsonObject, cachedSeq: number | null, nowMs: number): FactsVerdict {
  const seq = raw.seq;
  const issued = raw.issued_at_ms;
  const ttl = raw.ttl_s;
  if (raw.version !== 1) return { kind: "rejected", reason: "facts.version is not 1" };
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0)
    return { kind: "rejected", reason: "facts.seq is not a non-negative integer" };
  if (typeof issued !== "number" || !Number.isSafeInteger(issued))
    return { kind: "rejected", reason: "facts.issued_at_ms is not an integer" };
  if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl < 10 || ttl > 86_400)
    return { kind: "rejected", reason: "facts.ttl_s is outside 10…86400" };
  const expireAtMs = issued + ttl * 1000;
  if (expireAtMs <= nowMs) return { kind: "rejected", reason: `facts expired at ${expireAtMs}` };
  if (issued > nowMs + CLOCK_LEAD_MS)
    return { kind: "rejected", reason: "facts.issued_at_ms is more than 30 s ahead of the controller clock" };
  const caps = Array.isArray(raw.capabilities) ? raw.capabilities : [];
  for (const c of caps) {
    const id = typeof c === "object" && c !== null && !Array.isArray(c) ? (c as JsonObject).id : undefined;
    if (typeof id === "string" && (id === "trust" || id.startsWith("trust."))) {
      return {
        kind: "rejected",
        reason: `facts carry capability ${id}: tiers are assigned by the operator, never self-asserted`,
      };
    }
  }
  const labels = raw.labels;
  if (typeof labels === "object" && labels !== null && !Array.isArray(labels)) {
    for (const k of Object.keys(labels)) {
      if (k.startsWith("berth.io/tier"))
        return {
          kind: "rejected",
          reason: `facts carry label ${k}: tiers are assigned by the operator, never self-asserted`,
        };
    }
  }
  if (cachedSeq !== null && seq < cachedSeq) return { kind: "stale" };
  const parsed = nodeFactsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      kind: "rejected",
      reason: `facts.${issue?.path.map(String).join(".") ?? ""}: ${issue?.message ?? "invalid"}`,
    };
  }
  return { kind: "accepted", facts: parsed.data, seq, expireAtMs };
}
