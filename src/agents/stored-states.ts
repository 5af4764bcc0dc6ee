/**
 * Issue 35: `berth agents` by default, from the controller store alone (read-only, src/mesh/controller/stored-reads.ts).
 * Kept apart from status.ts so the list loads neither target's adapter unless a Kubernetes agent is in it.
 */
import type { ObservedInstance } from "../core/mesh/instance-observation.js";
import type { AgentRecord } from "./registry.js";
import { specFromText } from "./spec-file.js";
import { type AgentState, unknownAgentState, withLastDeploys } from "./state.js";
import type { KnownAgent } from "./target.js";

/** What `berth agents` says of a mesh agent whose instance no node was ever recorded reporting (issue 35). */
const NOT_SEEN_STATE = "unknown";

/**
 * Issue 35: every agent as the controller's store holds it, no node asked (`berth agents` by default; `--refresh` asks
 * every node, agentStates). A mesh agent shows the instance its placement names and the state its node last reported
 * as recorded, with `seen_ms` (core/mesh/instance-observation.ts; "unknown" and null when never), or "unsettled" while a
 * lost answer is not settled, "not placed" without a placement; a Kubernetes agent is looked at in
 * its cluster as always (`kubernetes`: the target's own states, a read of the cluster, nothing written).
 */
export async function storedAgentStates(
  records: readonly AgentRecord[],
  stored: {
    /** Every placement's name and instance id, oldest first (a later copy of a name wins). */
    readonly placed: ReadonlyArray<{ readonly name: string; readonly instance_id: string }>;
    readonly unsettled: ReadonlySet<string>;
    readonly observations: ReadonlyMap<string, ObservedInstance>;
  },
  kubernetes: (known: KnownAgent[]) => Promise<AgentState[]>,
): Promise<AgentState[]> {
  const placed = new Map(stored.placed.map((p) => [p.name, p.instance_id]));
  const states: AgentState[] = [];
  const cluster: KnownAgent[] = [];
  for (const record of records) {
    if (record.target === "kubernetes") {
      const loaded = specFromText(record.spec_text, record.spec_path);
      if (loaded.ok) cluster.push({ record, loaded: loaded.value });
      else states.push(unknownAgentState(record, loaded.error));
      continue;
    }
    const instance = placed.get(record.name) ?? null;
    const seen = instance === null ? undefined : stored.observations.get(instance);
    const state = stored.unsettled.has(record.name)
      ? "unsettled"
      : instance === null
        ? "not placed"
        : (seen?.state ?? NOT_SEEN_STATE);
    states.push({
      name: record.name,
      target: record.target,
      state,
      row: null,
      next: null,
      instance,
      observation: null,
      error: null,
      lifecycle: seen?.lifecycle ?? null,
      restarts: seen?.restarts ?? null,
      started_ms: seen?.started_ms ?? null,
      // Only a placed instance has a last-seen time to show (null: never seen); "not placed" is the store's own fact.
      ...(instance === null ? {} : { seen_ms: seen?.seen_ms ?? null }),
    });
  }
  if (cluster.length > 0) states.push(...(await kubernetes(cluster)));
  return withLastDeploys(states, records);
}
