/**
 * `berth agent history NAME` and `berth agent rollback NAME [REV]` (issue 36), for the CLI and the API alike: the
 * revisions come from the chain (`agent.remember`, core/agents/history.ts), their texts from the store's
 * `agent_revisions`; a rollback is a deploy of an earlier text, remembered with `rollback_of` naming the revision it
 * came from (on its `agent.remember` event), and deployed exactly as `berth deploy` deploys.
 */
import { lineDiff, revisionsOf, rollbackTarget, type SpecRevision } from "../core/agents/history.js";
import { deployAgent } from "./deploy.js";
import type { AgentsEnv } from "./env.js";
import { knownAgent } from "./lookup.js";
import { specFromText } from "./spec-file.js";
import type { DeployDone, Outcome } from "./target.js";
import { err, ok } from "../kit/result.js";

export interface HistoryRevision extends SpecRevision {
  /** Whether this store kept the text (false for an agent taken in from an older home's agents.db). */
  readonly kept: boolean;
  /** The lines changed from the revision before (null for the first, or when either text is not kept). */
  readonly diff: readonly string[] | null;
}

export interface HistoryAnswer {
  readonly agent: string;
  /** The revision deployed now (the last one). */
  readonly current: number | null;
  readonly revisions: readonly HistoryRevision[];
}

export async function agentHistory(env: AgentsEnv, name: string): Promise<Outcome<HistoryAnswer>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  return env.registry(async (reg) => {
    const revisions = revisionsOf(name, await reg.remembered());
    const texts = await Promise.all(revisions.map((r) => reg.revisionText(name, r.spec_sha256)));
    const shown = revisions.map((r, i): HistoryRevision => {
      const text = texts[i] ?? null;
      const before = i > 0 ? (texts[i - 1] ?? null) : null;
      return {
        ...r,
        kept: text !== null,
        diff:
          text !== null && before !== null
            ? lineDiff(before.spec_text, text.spec_text).filter((l) => !l.startsWith("  "))
            : null,
      };
    });
    return ok({ agent: name, current: revisions.at(-1)?.revision ?? null, revisions: shown });
  });
}

/** Deploys revision `wanted` (default: the one before the current) of the agent's spec. */
export async function rollbackAgent(
  env: AgentsEnv,
  name: string,
  wanted?: number,
): Promise<Outcome<DeployDone & { readonly revision: number }>> {
  const known = await knownAgent(env, name);
  if (!known.ok) return known;
  const found = await env.registry(async (reg) => {
    const target = rollbackTarget(revisionsOf(name, await reg.remembered()), wanted);
    if (!target.ok) return target;
    const text = await reg.revisionText(name, target.value.spec_sha256);
    return text === null
      ? err(`the text of revision ${target.value.revision} was not kept by this store`)
      : ok({ revision: target.value, text });
  });
  if (!found.ok)
    return err({ kind: "spec_unusable", usage: false, message: `${name} cannot be rolled back: ${found.error}` });
  const { revision, text } = found.value;
  const loaded = specFromText(text.spec_text, text.spec_path);
  if (!loaded.ok)
    return err({
      kind: "spec_unreadable",
      agent: name,
      message: `revision ${revision.revision} of ${name} no longer reads: ${loaded.error}`,
    });
  const done = await deployAgent(env, loaded.value, { rollbackOf: revision.revision });
  return done.ok ? ok({ ...done.value, revision: revision.revision }) : done;
}
