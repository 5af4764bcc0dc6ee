/**
 * A placement decision's candidate reports as one canonical document beside the chain (issue 35; spec/audit-chain.md
 * §12.2, mesh.md §7.7): the decision's `candidates` hold one `NodeReport` per node, a few hundred bytes each, so from
 * about 3,000 nodes on the chained decision event would pass the chain's 1 MiB payload limit and no placement could be
 * made. The event carries instead a small ref (`payload.candidates`: the document's hash, the number of reports and of
 * eligible ones) and the document is stored beside the chain, keyed by that hash, as the gate's summary is. Every
 * other member of the decision stays in the event, so the event stays O(1) in the number of nodes.
 *
 * Structural rules:
 * - the document is `{candidates, format}` in canonical form (JCS): `candidates` is the decision's ranked list, kept
 *   in its order (the order is part of the decision, §8.6), and `format` is `berth.placement.candidates.v1`;
 * - the hash is domain-separated (`berth.placement.candidates.v1`, §5.4), so it is never taken for a gate summary or
 *   a payload; the two kinds of documents share one table and are told apart by their `format` member;
 * - rehydrating a chained decision with its document gives back the decision the engine made, deep-equal.
 *
 * Pure: no I/O; the shell stores the canonical text and the verifier recomputes the hash from it.
 */
import type { Result } from "../../kit/result.js";
import { canonicalJson, type JsonObject, type JsonValue, parseCanonical } from "../crypto/canonical.js";
import { isLowerHex } from "../crypto/hex.js";
import { taggedSha256Hex } from "../crypto/tagged.js";
import type { NodeReport, PlacementDecision } from "./outputs.js";

export const CANDIDATES_FORMAT = "berth.placement.candidates.v1";

/** What the decision event records of its candidates (payload member `candidates`). */
export interface CandidatesRef {
  /** 64 hex: `SHA-256(TAG("berth.placement.candidates.v1") ‖ JCS(document))`; named like the gate's ref. */
  readonly summary: string;
  readonly format: typeof CANDIDATES_FORMAT;
  readonly count: number;
  readonly eligible: number;
}

export interface CandidatesDocument {
  /** The canonical text, exactly what is stored and hashed. */
  readonly canonical: string;
  readonly ref: CandidatesRef;
}

/** §5.4: the hash of a candidates document's canonical text. */
export function candidatesHashOf(canonical: string): string {
  return taggedSha256Hex(CANDIDATES_FORMAT, canonical);
}

/**
 * The members a canonical candidates document ends with: `format` sorts after `candidates`, so it is the last member
 * of the top-level object. A string value cannot end so (its quotes are escaped) and a nested object would end `}}`.
 */
const FORMAT_TAIL = `,"format":"${CANDIDATES_FORMAT}"}`;

/** Whether a stored document declares itself a candidates document (else it is a gate summary). */
export function isCandidatesText(canonical: string): boolean {
  return canonical.startsWith('{"candidates":') && canonical.endsWith(FORMAT_TAIL);
}

/** The document of a decision's candidates and the ref its event carries. */
export function candidatesDocumentOf(candidates: readonly NodeReport[]): CandidatesDocument {
  const canonical = canonicalJson({
    candidates: candidates as unknown as JsonValue,
    format: CANDIDATES_FORMAT,
  });
  const eligible = candidates.reduce((n, c) => (c.eligible ? n + 1 : n), 0);
  return {
    canonical,
    ref: { summary: candidatesHashOf(canonical), format: CANDIDATES_FORMAT, count: candidates.length, eligible },
  };
}

/** The decision as its event records it: every member but `candidates`, which the ref stands for. */
export function decisionWithoutCandidates(decision: PlacementDecision): JsonObject {
  const { candidates: _beside, ...rest } = decision;
  return rest as unknown as JsonObject;
}

/** Parses a stored document's text into its reports, or says what is wrong. Does not check the hash. */
export function parseCandidatesDocument(text: string): Result<NodeReport[]> {
  const parsed = parseCanonical(text);
  if (!parsed.ok) return { ok: false, error: `the candidates document is not canonical JSON: ${parsed.error}` };
  const v = parsed.value as { [key: string]: JsonValue };
  if (typeof v !== "object" || v === null || Array.isArray(v) || v.format !== CANDIDATES_FORMAT)
    return { ok: false, error: `the candidates document's format is not ${CANDIDATES_FORMAT}` };
  const candidates = v.candidates;
  if (!Array.isArray(candidates) || candidates.some((c) => typeof c !== "object" || c === null || Array.isArray(c)))
    return { ok: false, error: "the candidates document's candidates are not a list of objects" };
  return { ok: true, value: candidates as unknown as NodeReport[] };
}

/** The `candidates` member of a decision payload, if it is a ref (events since issue 35); null for inline lists. */
export function candidatesRefOf(payload: JsonObject): CandidatesRef | null {
  const ref = payload.candidates;
  if (typeof ref !== "object" || ref === null || Array.isArray(ref)) return null;
  const { summary, format, count, eligible } = ref as { [key: string]: JsonValue };
  if (!isLowerHex(summary, 32) || format !== CANDIDATES_FORMAT || typeof count !== "number") return null;
  if (typeof eligible !== "number") return null;
  return { summary, format, count, eligible };
}
