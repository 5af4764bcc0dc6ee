/**
 * The agent registry's records and the chain events of its changes (issue 20), pure. The registry is name → target
 * and the spec last deployed, kept in the controller store (`agent_registry`, controller schema v7) so every server
 * on one store and a new leader's Kubernetes keeper know the same agents; it was each home's `agents.db` before.
 *
 * Audit kinds (source `placement`, the controller's chain), each in the transaction of the change it records:
 * - `agent.remember` {agent, target, intent, spec_path, spec_sha256, deployed_ms}: a deploy remembered its spec. The
 *   spec text itself is not chained: it is in the row, and the chain names it by digest (it may name secret files).
 * - `agent.registry.import` {from, host, imported, kept, same}: a home's `agents.db` was taken into the store, once.
 *
 * Structural rule of the import: **the store wins**. A name the store already knows is never overwritten by a home's
 * older file (another server on the same store deployed it since); it is chained as `kept`, with both intents.
 */
import type { JsonObject } from "../crypto/canonical.js";
import { sha256 } from "../crypto/tagged.js";
import type { EventDraft } from "../chain/event.js";
import type { DeployTarget } from "./deploy-event.js";

export interface AgentRecord {
  readonly name: string;
  readonly target: DeployTarget;
  /** Absolute path of the spec file as last deployed (relative paths in it resolve against it). */
  readonly spec_path: string;
  /** The spec text as last deployed. */
  readonly spec_text: string;
  readonly intent: string;
  readonly deployed_ms: number;
  /**
   * Issue 33: how the last deploy of this record ended (`started`, `failed` …) and its message, so a record a deploy
   * left after it failed says why. Null for a record written before (schema v10) or imported from agents.db.
   */
  readonly last_outcome?: string | null;
  readonly last_message?: string | null;
  /** Issue 36: set by `berth agent rollback`: the revision whose spec this deploy brought back (chained, not stored). */
  readonly rollback_of?: number;
  /** Issue 37: set when the record was had back from this decision's placement (`recoveredRecord`; chained, not stored). */
  readonly recovered_from?: string;
}

export const specDigest = (specText: string): string => sha256(specText).toString("hex");

export function rememberEventDraft(r: AgentRecord): EventDraft {
  return {
    source: "placement",
    kind: "agent.remember",
    payload: {
      agent: r.name,
      target: r.target,
      intent: r.intent,
      spec_path: r.spec_path,
      spec_sha256: specDigest(r.spec_text),
      deployed_ms: r.deployed_ms,
      ...(r.last_outcome ? { outcome: r.last_outcome } : {}),
      ...(r.rollback_of !== undefined ? { rollback_of: r.rollback_of } : {}),
      ...(r.recovered_from !== undefined ? { recovered_from: r.recovered_from } : {}),
    },
  };
}

/** A mesh placement as the store keeps it, with what its decision's stored order says of the deploy behind it. */
export interface PlacementOfDeploy {
  readonly name: string;
  readonly instance_id: string;
  readonly decision_id: string;
  readonly placed_ms: number;
  /** The stored order's agent, intent and start, and the spec its deploy came from (absent: not a deploy's). */
  readonly agent: string | null;
  readonly intent: string | null;
  readonly start: boolean;
  readonly spec: { readonly spec_path: string; readonly spec_text: string } | undefined;
}

/**
 * Issue 37 (campaign seeds 11246, 11525): the record of an agent whose deploy placed it and then ended before the
 * registry took the record (the deploying server killed, or the store away at that moment). The placement is proof
 * that the deploy was accepted, so the record it would have written is written from the spec kept with the decision;
 * without it, `berth agent stop NAME` answered "no agent was deployed" while the agent ran. Null for a placement
 * that no deploy made (a raw `berth place`, or an order kept before the spec was): nothing is invented. A refused
 * deploy makes no placement, so this never gives one a record (issue 33). A list read while a deploy is between its
 * placement and its own `agent.remember` writes the record first; the deploy's follows, and the message says only
 * what is certain (no record was there), not that the deploy died.
 */
export function recoveredRecord(p: PlacementOfDeploy): AgentRecord | null {
  if (p.agent !== p.name || p.intent === null || p.spec === undefined) return null;
  return {
    name: p.name,
    target: "mesh",
    spec_path: p.spec.spec_path,
    spec_text: p.spec.spec_text,
    intent: p.intent,
    deployed_ms: p.placed_ms,
    last_outcome: p.start ? "started" : "waiting",
    last_message: `${p.name}: recorded from its placement ${p.instance_id} (decision ${p.decision_id.slice(0, 12)}): the store held no record of the agent, which the deploy that placed it had not written (it ended first, or had not yet)`,
    recovered_from: p.decision_id,
  };
}

/** Issue 33, `berth agent delete NAME`: the record removed once nothing of the agent runs; who asked and why. */
export function deleteEventDraft(r: AgentRecord, operator: JsonObject): EventDraft {
  return {
    source: "placement",
    kind: "agent.delete",
    payload: { agent: r.name, target: r.target, intent: r.intent, spec_sha256: specDigest(r.spec_text), operator },
  };
}

export interface RegistryImportPlan {
  /** Names the store does not know: inserted as the file has them. */
  readonly insert: readonly AgentRecord[];
  /** Names the store knows with another record: the store's is kept. */
  readonly kept: readonly { readonly name: string; readonly file_intent: string; readonly store_intent: string }[];
  /** Names the store already holds exactly as the file does (another process imported it first). */
  readonly same: readonly string[];
}

const sameRecord = (a: AgentRecord, b: AgentRecord) =>
  a.target === b.target &&
  a.spec_path === b.spec_path &&
  a.spec_text === b.spec_text &&
  a.intent === b.intent &&
  a.deployed_ms === b.deployed_ms;

/** What taking a home's `agents.db` into the store does, given what the store holds now (read in the same transaction). */
export function planRegistryImport(stored: readonly AgentRecord[], file: readonly AgentRecord[]): RegistryImportPlan {
  const byName = new Map(stored.map((r) => [r.name, r]));
  const insert: AgentRecord[] = [];
  const kept: Array<{ name: string; file_intent: string; store_intent: string }> = [];
  const same: string[] = [];
  for (const r of file) {
    const there = byName.get(r.name);
    if (there === undefined) insert.push(r);
    else if (sameRecord(there, r)) same.push(r.name);
    else kept.push({ name: r.name, file_intent: r.intent, store_intent: there.intent });
  }
  return { insert, kept, same };
}

/** Whether the import changes or decides anything worth a chain event (an all-`same` import is a repeat: nothing). */
export const importIsEventful = (p: RegistryImportPlan): boolean => p.insert.length > 0 || p.kept.length > 0;

export function importEventDraft(from: string, host: string, p: RegistryImportPlan): EventDraft {
  const payload: JsonObject = {
    from,
    host,
    imported: p.insert.map((r) => ({
      agent: r.name,
      target: r.target,
      intent: r.intent,
      spec_sha256: specDigest(r.spec_text),
    })),
    kept: p.kept.map((k) => ({ agent: k.name, file_intent: k.file_intent, store_intent: k.store_intent })),
    same: [...p.same],
  };
  return { source: "placement", kind: "agent.registry.import", payload };
}
