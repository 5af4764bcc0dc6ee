/**
 * The agents berth was asked to run: name → target and the spec last deployed, in the controller store (issue 20:
 * `agent_registry`, src/mesh/controller/store-agents.ts; each home's `agents.db` before, taken in once on open). It is
 * what `berth agents` lists, what `berth agent replace NAME` re-deploys and what the leader's Kubernetes keeper keeps.
 * It holds no state of any target: every verb observes the target afresh, so a lost or stale registry can never make
 * berth act on the wrong instance. Every server on one store sees the same registry.
 */
import type { AgentRecord } from "../core/agents/registry.js";
import type { SealedEvent } from "../core/chain/event.js";
import type { ControllerStore } from "../mesh/controller/store.js";
import type { RememberEvent } from "../core/agents/history.js";
import {
  agentRecord,
  agentRecords,
  agentRevisionText,
  deleteAgentRecord,
  recoverAgentRecords,
  rememberAgent,
} from "../mesh/controller/store-agents.js";
import { deleteEventDraft } from "../core/agents/registry.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import type { Result } from "../kit/result.js";

export type { AgentRecord } from "../core/agents/registry.js";
export { AGENTS_DB } from "../mesh/controller/store-agents.js";

export class AgentRegistry {
  constructor(private readonly store: ControllerStore) {}

  /** Remembers a deploy's spec by name, with its `agent.remember` event, in one transaction. */
  remember(r: AgentRecord): Promise<SealedEvent> {
    return rememberAgent(this.store, r);
  }

  /** Issue 33: removes the record with its `agent.delete` event, unless the store still holds anything of the name. */
  delete(name: string, operator: JsonObject): Promise<Result<SealedEvent>> {
    return deleteAgentRecord(this.store, name, (r) => deleteEventDraft(r, operator));
  }

  /**
   * Issue 37: the records of agents (all, or `name`) that a deploy placed on the mesh and then did not record, written
   * from the spec kept with their decision; what was written (usually nothing).
   */
  recover(name: string | null): Promise<AgentRecord[]> {
    return recoverAgentRecords(this.store, name);
  }

  get(name: string): Promise<AgentRecord | null> {
    return this.store.engine.read((q) => agentRecord(q, name));
  }

  /** Issue 36: every `agent.remember` event on the chain (all agents, oldest first). */
  async remembered(): Promise<RememberEvent[]> {
    return (await this.store.chain.find({ kind: "agent.remember" })).map((e) => ({ seq: e.seq, payload: e.payload }));
  }

  /** Issue 36: a revision's spec text by its digest (null when this store never kept it: an agent imported from agents.db). */
  revisionText(name: string, specSha256: string): Promise<{ spec_path: string; spec_text: string } | null> {
    return this.store.engine.read((q) => agentRevisionText(q, name, specSha256));
  }

  list(): Promise<AgentRecord[]> {
    return this.store.engine.read((q) => agentRecords(q));
  }
}
