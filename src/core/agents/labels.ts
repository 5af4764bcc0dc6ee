/**
 * Labels and selectors (issue 36): `metadata.labels` on an agent spec, in Kubernetes' label syntax, and the
 * `-l`/`?labelSelector=` selectors the lists take (`key=value`, `key==value`, `key!=value`, `key`, `!key`, joined by
 * commas, all must hold), as kubectl reads them. Pure.
 */
import type { Result } from "../../kit/result.js";
import { z } from "zod";

const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Kubernetes' rule for a label key: an optional DNS-subdomain prefix (≤ 253) and `/`, then a name of ≤ 63. */
export function labelKeyProblem(key: string): string | null {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : null;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== null && (prefix.length === 0 || prefix.length > 253 || !PREFIX.test(prefix)))
    return `label key ${JSON.stringify(key)}: its prefix must be a DNS subdomain (lowercase letters, digits, '-', '.'; at most 253 characters)`;
  if (name.length === 0 || name.length > 63 || !NAME.test(name))
    return `label key ${JSON.stringify(key)}: its name must be 1–63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`;
  return null;
}

export function labelValueProblem(value: string): string | null {
  if (value === "") return null;
  if (value.length > 63 || !NAME.test(value))
    return `label value ${JSON.stringify(value)}: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit (or empty)`;
  return null;
}

export const LabelsSchema = z.record(z.string(), z.string()).superRefine((labels, ctx) => {
  for (const [key, value] of Object.entries(labels)) {
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem !== null) ctx.addIssue({ code: "custom", path: [key], message: problem });
  }
});

export type Requirement = {
  readonly key: string;
  readonly op: "=" | "!=" | "exists" | "!exists";
  readonly value: string;
};

/** A selector's requirements, or what is wrong with it (naming the part). The empty selector selects everything. */
export function parseSelector(text: string): Result<Requirement[]> {
  const requirements: Requirement[] = [];
  for (const raw of text.split(",")) {
    const part = raw.trim();
    if (part === "") continue;
    const m = /^(!?)([^=!\s]+)\s*(?:(==|=|!=)\s*(\S*))?$/.exec(part);
    if (m === null)
      return {
        ok: false,
        error: `selector ${JSON.stringify(part)}: use key=value, key!=value, key or !key, joined by commas`,
      };
    const [, not, key = "", op, value = ""] = m;
    const problem = labelKeyProblem(key) ?? (op ? labelValueProblem(value) : null);
    if (problem !== null) return { ok: false, error: `selector ${JSON.stringify(part)}: ${problem}` };
    if (not && op) return { ok: false, error: `selector ${JSON.stringify(part)}: !key takes no value` };
    requirements.push(
      op === undefined
        ? { key, op: not ? "!exists" : "exists", value: "" }
        : { key, op: op === "!=" ? "!=" : "=", value },
    );
  }
  return { ok: true, value: requirements };
}

/**
 * Issue 36, `berth instances -l`: the rows whose agent's `metadata.labels` a selector selects. An instance carries the
 * labels of the agent it runs (`agent`, else its placement `name`); one placed by hand (`berth place`) has none.
 */
export function rowsOfSelectedAgents<T>(
  rows: readonly T[],
  requirements: readonly Requirement[],
  agentOf: (row: T) => string,
  labelsOf: ReadonlyMap<string, Readonly<Record<string, string>>>,
): T[] {
  if (requirements.length === 0) return [...rows];
  return rows.filter((r) => selects(requirements, labelsOf.get(agentOf(r)) ?? {}));
}

/** A requirement in Kubernetes' selector syntax (`key=value`, `key!=value`, `key`, `!key`), for the apiserver. */
export function selectorText(r: Requirement): string {
  switch (r.op) {
    case "=":
      return `${r.key}=${r.value}`;
    case "!=":
      return `${r.key}!=${r.value}`;
    case "exists":
      return r.key;
    case "!exists":
      return `!${r.key}`;
    default: {
      const never: never = r.op;
      return never;
    }
  }
}

/** The agent an instance row runs: its node's `agent` (a deploy's), else the placement's name. */
export function instanceAgent(row: {
  readonly name: string;
  readonly status?: { readonly agent?: unknown } | null;
}): string {
  const agent = row.status?.agent;
  return typeof agent === "string" && agent !== "" ? agent : row.name;
}

/** Whether `labels` satisfy every requirement (a missing key satisfies `!=` and `!key`, as in Kubernetes). */
export function selects(requirements: readonly Requirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    switch (r.op) {
      case "=":
        return has && labels[r.key] === r.value;
      case "!=":
        return !has || labels[r.key] !== r.value;
      case "exists":
        return has;
      case "!exists":
        return !has;
      default: {
        const never: never = r.op;
        return never;
      }
    }
  });
}
