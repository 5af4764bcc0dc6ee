/**
 * One text per mistake in an agent spec (issue 36 item 4): the CLI on its files, `berth serve` for a CLI that went
 * through it, and the API for a JSON body all describe a spec that failed its schema with these lines, in the
 * spec's own field names (`spec.restrat`, `spec.mesh.prefer[0]`), never a transport's (`body.spec.restrat`).
 *
 *   FILE: spec.restrat: unknown field (did you mean restart?); remove it or correct its spelling
 *   FILE: spec.package: must be a string (a path to the package directory)
 *
 * `source` names the spec as its author knows it (the file given to `berth deploy`); null when there is none (a
 * body posted to the API), and then the lines start with the field. Pure: no I/O.
 */
import type { z } from "zod";

/** `spec.mesh.prefer[0]` from `["spec", "mesh", "prefer", 0]`; the whole document is `(document)`. */
export function specFieldPath(path: ReadonlyArray<PropertyKey>): string {
  if (path.length === 0) return "(document)";
  return path
    .map((p) => (typeof p === "number" ? `[${p}]` : String(p)))
    .join(".")
    .replace(/\.\[/g, "[");
}

interface ZodInternals {
  readonly _zod: {
    readonly def: {
      readonly type: string;
      readonly innerType?: unknown;
      readonly shape?: Record<string, unknown>;
      readonly in?: unknown;
    };
  };
}

/** The keys the schema allows at `path` (through optional, default, nullable and pipes), for a "did you mean". */
function keysAt(schema: unknown, path: ReadonlyArray<PropertyKey>): string[] {
  let s = schema as ZodInternals | undefined;
  const unwrap = () => {
    for (let i = 0; i < 8 && s?._zod?.def; i++) {
      const d = s._zod.def;
      if (d.innerType) s = d.innerType as ZodInternals;
      else if (d.type === "pipe" && d.in) s = d.in as ZodInternals;
      else break;
    }
  };
  unwrap();
  for (const p of path) {
    const shape = s?._zod?.def.shape;
    if (!shape || typeof p !== "string") return [];
    s = shape[p] as ZodInternals | undefined;
    unwrap();
  }
  return Object.keys(s?._zod?.def.shape ?? {});
}

/** Edit distance, small inputs only (field names). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j] as number;
      row[j] = Math.min(here + 1, (row[j - 1] as number) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length] as number;
}

function closest(key: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

export interface SpecIssue {
  /** The field in the spec's own names, e.g. `spec.restrat`. */
  readonly field: string;
  readonly message: string;
}

/** Each schema issue as a field and what is wrong with it; an unknown key is an issue of its own field. */
export function specIssues(schema: z.ZodType, issues: ReadonlyArray<z.core.$ZodIssue>): SpecIssue[] {
  const out: SpecIssue[] = [];
  for (const i of issues) {
    if (i.code === "unrecognized_keys") {
      const known = keysAt(schema, i.path);
      for (const key of i.keys) {
        const near = closest(key, known);
        out.push({
          field: specFieldPath([...i.path, key]),
          message: `unknown field${near ? ` (did you mean ${near}?)` : ""}; remove it or correct its spelling`,
        });
      }
      continue;
    }
    // zod's "expected string, received undefined" is a field that is missing: say so.
    const missing = /^Invalid input: expected (\w+), received undefined$/.exec(i.message);
    out.push({ field: specFieldPath(i.path), message: missing ? `missing; give a ${missing[1]}` : i.message });
  }
  return out;
}

/** The lines a person reads: `SOURCE: FIELD: MESSAGE`, or `FIELD: MESSAGE` when the spec has no name. */
export function specIssueLines(source: string | null, issues: readonly SpecIssue[]): string[] {
  return issues.map((i) => `${source === null ? "" : `${source}: `}${i.field}: ${i.message}`);
}
