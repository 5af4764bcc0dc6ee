/**
 * An agent by name: the registry's record and the spec as last deployed. The registry is never a source of target
 * state (`registry.ts`); it only says which spec and which target a verb on the name is about.
 */
import type { AgentsEnv } from "./env.js";
import type { AgentRecord } from "./registry.js";
import { specFromText } from "./spec-file.js";
import type { KnownAgent, Outcome } from "./target.js";
import { err, ok } from "../kit/result.js";

/** Every recorded agent, with any a deploy placed and did not record had back first (issue 37, `registry.recover`). */
export function listAgents(env: AgentsEnv): Promise<AgentRecord[]> {
  return env.registry(async (r) => {
    await r.recover(null);
    return r.list();
  });
}

export async function knownAgent(env: AgentsEnv, name: string): Promise<Outcome<KnownAgent>> {
  // Issue 37: a placement whose deploy died before recording it is still this name's agent: its record comes back.
  const record = await env.registry(async (r) => (await r.get(name)) ?? (await r.recover(name))[0] ?? null);
  if (record === null)
    return err({
      kind: "unknown_agent",
      agent: name,
      message: `no agent ${JSON.stringify(name)} was deployed from this berth home`,
    });
  const loaded = specFromText(record.spec_text, record.spec_path);
  if (!loaded.ok) return err({ kind: "spec_unreadable", agent: name, message: loaded.error });
  return ok({ record, loaded: loaded.value });
}
