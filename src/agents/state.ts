/**
 * An agent's state on its target, as `berth agents` and `GET /api/v1/agents` show it: what the classifier sees now
 * (the row), what a deploy would do next, the instance, and the raw observation. One shape for both targets (each
 * fills it in its folder under `targets/`) and for both edges, so the CLI and the API say the same thing about the
 * same agent.
 */
import type { JsonObject } from "../core/crypto/canonical.js";
import type { AgentRecord } from "./registry.js";

export interface AgentState {
  readonly name: string;
  readonly target: string;
  readonly state: string;
  readonly row: string | null;
  readonly next: string | null;
  readonly instance: string | null;
  readonly observation: JsonObject | null;
  readonly error: string | null;
  /**
   * Issue 15 (mesh): the node's lifecycle state of the current instance (`running`, `unhealthy`, `backoff`, `failed`,
   * `finished` …) and the restarts its node's supervisor made since the operator last started it.
   */
  readonly lifecycle?: string | null;
  readonly restarts?: number | null;
  /** Issue 36 (mesh): when the current instance's process last started (ms since the epoch, the node's clock). */
  readonly started_ms?: number | null;
  /**
   * Issue 35: the stored list (`berth agents` without --refresh) only: when the current instance's node last reported
   * the state shown (the controller's clock), null when it never was; absent from a live answer.
   */
  readonly seen_ms?: number | null;
  /** Issue 33: the message of the last deploy when it failed (the record kept says why); absent otherwise. */
  readonly last_deploy?: string | null;
}

/** The state of an agent berth could not look at, with the reason. */
export function unknownAgentState(record: Pick<AgentRecord, "name" | "target">, error: string): AgentState {
  return {
    name: record.name,
    target: record.target,
    state: "unknown",
    row: null,
    next: null,
    instance: null,
    observation: null,
    error,
  };
}

/** Issue 33: a record whose last deploy failed says why beside its state (by name: one lookup per agent, issue 35). */
export function withLastDeploys(states: readonly AgentState[], records: readonly AgentRecord[]): AgentState[] {
  const byName = new Map(records.map((r) => [r.name, r]));
  return states
    .map((s) => {
      const r = byName.get(s.name);
      return r?.last_outcome === "failed" && r.last_message ? { ...s, last_deploy: r.last_message } : s;
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
