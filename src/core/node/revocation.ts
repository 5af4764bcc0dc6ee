/**
 * Which revoked subject, if any, an instance answers to (spec/mesh.md §7.5, §11.4). Pure: the node's sweep and its
 * place handler (§11.1 step 12) feed it the instance's verified references and the current list.
 */
import { canonicalJson, type JsonValue } from "../crypto/canonical.js";
import type { RevocationList } from "../governance/policy.js";

/** The verified references of a loaded instance: its package id, the keys that signed it, its files' hashes. */
export interface RevocableRefs {
  readonly package_id: string;
  readonly signer_keys: readonly string[];
  readonly file_hashes: readonly string[];
}

/** `package <id>`, `signer <key>` or `file <sha256>` for the first subject that names the instance; `null` if none. */
export function revokedSubject(refs: RevocableRefs, revocations: RevocationList | null): string | null {
  if (!revocations) return null;
  for (const s of revocations.subjects) {
    if (s.kind === "package" && s.id === refs.package_id) return `package ${s.id}`;
    if (s.kind === "signer" && refs.signer_keys.includes(s.id)) return `signer ${s.id}`;
    if (s.kind === "file" && refs.file_hashes.includes(s.id)) return `file ${s.id}`;
  }
  return null;
}

/**
 * Whether the revocation list changed between two reads (§11.1 step 12), judged from its content, not its declared
 * `generation`: an operator who edits the subjects and forgets to raise the generation still changes the list
 * (issue 12). `null` (unreadable) differs from every readable list.
 */
export function revocationsChanged(before: RevocationList | null, after: RevocationList | null): boolean {
  if (before === null || after === null) return before !== after;
  return canonicalJson(before as unknown as JsonValue) !== canonicalJson(after as unknown as JsonValue);
}

/**
 * Issue 33: what a node enforces is its own list (`revocations.json`, the operator's on that machine) together with
 * every list a controller pushed (`berth revoke`); one unreadable list makes the whole unreadable (fail closed, §7.3
 * step 4). The generation is the local one: changes are judged by content (`revocationsChanged`).
 */
export function mergeRevocations(
  local: RevocationList | null,
  pushed: ReadonlyArray<RevocationList | null>,
): RevocationList | null {
  if (local === null || pushed.some((p) => p === null)) return null;
  const seen = new Set<string>();
  const subjects: RevocationList["subjects"][number][] = [];
  for (const list of [local, ...(pushed as RevocationList[])]) {
    for (const s of list.subjects) {
      const key = `${s.kind}:${s.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      subjects.push(s);
    }
  }
  return { generation: local.generation, subjects };
}

/** A pushed list judged against the one a node holds from that controller (issue 33): never back to an older one. */
export type PushVerdict =
  | {
      readonly kind: "take";
      readonly revoked: RevocationList["subjects"];
      readonly unrevoked: RevocationList["subjects"];
    }
  | { readonly kind: "same" }
  | { readonly kind: "older"; readonly held: number };

export function judgePush(held: RevocationList | null, pushed: RevocationList): PushVerdict {
  if (held !== null && pushed.generation < held.generation) return { kind: "older", held: held.generation };
  if (held !== null && pushed.generation === held.generation) return { kind: "same" };
  const key = (s: RevocationList["subjects"][number]) => `${s.kind}:${s.id}`;
  const before = new Set((held?.subjects ?? []).map(key));
  const after = new Set(pushed.subjects.map(key));
  return {
    kind: "take",
    revoked: pushed.subjects.filter((s) => !before.has(key(s))),
    unrevoked: (held?.subjects ?? []).filter((s) => !after.has(key(s))),
  };
}
