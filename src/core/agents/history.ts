/**
 * `berth agent history NAME` and `berth agent rollback NAME [REV]` (issue 36), pure: an agent's spec revisions from
 * the chain, and a line diff between two of them. Every deploy chains `agent.remember` naming the spec by its digest
 * (core/agents/registry.ts); consecutive deploys of the same spec are one revision, so REV counts the changes of spec
 * in the order they were deployed (a rollback to an old text is a new revision with that text).
 */
import type { Result } from "../../kit/result.js";
import type { JsonObject } from "../crypto/canonical.js";

export interface SpecRevision {
  /** 1 for the first spec deployed, then one more for each change of spec. */
  readonly revision: number;
  readonly spec_sha256: string;
  readonly intent: string;
  readonly spec_path: string;
  /** The chain position and time of the first deploy of this revision, and how many deploys it had in a row. */
  readonly seq: number;
  readonly deployed_ms: number;
  readonly deploys: number;
  /** Set when this revision was deployed by `berth agent rollback`: the revision it came from. */
  readonly rollback_of: number | null;
}

export interface RememberEvent {
  readonly seq: number;
  readonly payload: JsonObject;
}

/** The agent's revisions, oldest first, from its `agent.remember` events in chain order. */
export function revisionsOf(agent: string, events: readonly RememberEvent[]): SpecRevision[] {
  const out: SpecRevision[] = [];
  for (const e of events) {
    const p = e.payload;
    if (p.agent !== agent || typeof p.spec_sha256 !== "string") continue;
    const last = out.at(-1);
    if (last !== undefined && last.spec_sha256 === p.spec_sha256) {
      out[out.length - 1] = { ...last, deploys: last.deploys + 1 };
      continue;
    }
    const rollback = typeof p.rollback_of === "number" ? p.rollback_of : null;
    out.push({
      revision: out.length + 1,
      spec_sha256: p.spec_sha256,
      intent: String(p.intent ?? ""),
      spec_path: String(p.spec_path ?? ""),
      seq: e.seq,
      deployed_ms: typeof p.deployed_ms === "number" ? p.deployed_ms : 0,
      deploys: 1,
      rollback_of: rollback,
    });
  }
  return out;
}

/** The revision a rollback deploys: `wanted`, or the one before the current (last) revision. */
export function rollbackTarget(revisions: readonly SpecRevision[], wanted: number | undefined): Result<SpecRevision> {
  if (revisions.length === 0) return { ok: false, error: "it has no deployed revision on the chain" };
  const current = revisions.at(-1) as SpecRevision;
  const n = wanted ?? current.revision - 1;
  if (n < 1)
    return {
      ok: false,
      error: `revision ${current.revision} is its only one; there is nothing earlier to roll back to`,
    };
  const r = revisions.find((x) => x.revision === n);
  if (r === undefined)
    return {
      ok: false,
      error: `it has no revision ${n} (revisions 1…${current.revision}; \`berth agent history NAME\` lists them)`,
    };
  if (r.spec_sha256 === current.spec_sha256)
    return {
      ok: false,
      error: `revision ${n} is the spec deployed now (revision ${current.revision}); nothing to roll back`,
    };
  return { ok: true, value: r };
}

/**
 * A line diff from `before` to `after`: ` ` kept, `-` removed, `+` added, by the longest common subsequence of
 * lines (specs are a few dozen lines, so the quadratic table is small).
 */
export function lineDiff(before: string, after: string): string[] {
  const a = before.replace(/\n$/, "").split("\n");
  const b = after.replace(/\n$/, "").split("\n");
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      const row = lcs[i] as number[];
      row[j] =
        a[i] === b[j]
          ? ((lcs[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lcs[i + 1] as number[])[j] as number, row[j + 1] as number);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push(`  ${a[i]}`);
      i++;
      j++;
    } else if (((lcs[i + 1] as number[])[j] as number) >= ((lcs[i] as number[])[j + 1] as number))
      out.push(`- ${a[i++]}`);
    else out.push(`+ ${b[j++]}`);
  }
  while (i < a.length) out.push(`- ${a[i++]}`);
  while (j < b.length) out.push(`+ ${b[j++]}`);
  return out;
}
