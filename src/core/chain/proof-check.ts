/**
 * Checking a proof document offline (issue 38), with nothing but the owner's public key: an inclusion proof (one
 * event is in the tree) or a consistency proof (an older tree is a prefix of a newer one), each carrying the signed
 * checkpoint note(s) of the tree(s) it names, as `GET /api/v1/audit/proof/…` answers them and `berth audit verify
 * --proof FILE` reads them. The note binds the size and the root to the key; the proof binds the event (or the older
 * tree) to that root (RFC 9162 §2.1.3.2, §2.1.4.2). Pure; outcomes as values, every refusal naming the field.
 */
import { z } from "zod";
import { err, ok, type Result } from "../../kit/result.js";
import { type Hash, leafHash, verifyConsistency, verifyInclusion } from "./merkle.js";
import { openCheckpointNote } from "./note.js";

const B64Hash = z.string().regex(/^[A-Za-z0-9+/]{43}=$/, "must be a 32-byte hash in base64");
const Size = z.number().int().min(1);
const Head = z.object({ tree_size: Size, root: B64Hash, note: z.string().min(1).max(4096) });

export const InclusionDocument = z.object({
  kind: z.literal("inclusion"),
  origin: z.string(),
  tree_size: Size,
  root: B64Hash,
  leaf_index: z.number().int().min(0),
  event_hash: z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex"),
  path: z.array(B64Hash).max(64),
  note: z.string().min(1).max(4096),
});

export const ConsistencyDocument = z.object({
  kind: z.literal("consistency"),
  origin: z.string(),
  old: Head,
  new: Head,
  proof: z.array(B64Hash).max(128),
});

export const ProofDocument = z.discriminatedUnion("kind", [InclusionDocument, ConsistencyDocument]);
export type ProofDocument = z.infer<typeof ProofDocument>;

/** What a proof that holds shows, in one sentence. */
export interface ProvenDocument {
  readonly kind: "inclusion" | "consistency";
  readonly origin: string;
  readonly summary: string;
}

/** The proof holds, or the field at fault and why. */
export type ProofCheck = Result<ProvenDocument>;

const h = (b64: string): Hash => Buffer.from(b64, "base64");

/** The note must verify under the key and state exactly this origin, size and root. */
function checkNote(
  field: string,
  note: string,
  key: string,
  origin: string,
  size: number,
  root: string,
): string | null {
  const opened = openCheckpointNote(note, key);
  if (!opened.ok) return `${field}: ${opened.error}`;
  const cp = opened.value;
  if (cp.origin !== origin) return `${field}: the note is for ${cp.origin}, the proof for ${origin}`;
  if (cp.size !== size || cp.root.toString("base64") !== root)
    return `${field}: the note signs tree size ${cp.size} root ${cp.root.toString("base64")}, the proof names tree size ${size} root ${root}`;
  return null;
}

export function checkProofDocument(doc: unknown, publicKeyHex: string): ProofCheck {
  const parsed = ProofDocument.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return err(
      `${issue?.path.join(".") || "document"}: ${issue?.message ?? "invalid"} (a proof document as GET /api/v1/audit/proof/… answers it)`,
    );
  }
  const d = parsed.data;
  if (d.kind === "inclusion") {
    const bad = checkNote("note", d.note, publicKeyHex, d.origin, d.tree_size, d.root);
    if (bad) return err(bad);
    if (d.leaf_index >= d.tree_size) return err(`leaf_index: ${d.leaf_index} is not below tree_size ${d.tree_size}`);
    if (!verifyInclusion(leafHash(d.event_hash), d.leaf_index, d.tree_size, d.path.map(h), h(d.root))) {
      return err(
        `path: the inclusion proof of event ${d.event_hash} at seq ${d.leaf_index} does not lead to the signed root of tree size ${d.tree_size}`,
      );
    }
    return ok({
      kind: "inclusion",
      origin: d.origin,
      summary: `seq ${d.leaf_index} (${d.event_hash}) is in tree size ${d.tree_size} root ${d.root}`,
    });
  }
  for (const [field, head] of [
    ["old.note", d.old],
    ["new.note", d.new],
  ] as const) {
    const bad = checkNote(field, head.note, publicKeyHex, d.origin, head.tree_size, head.root);
    if (bad) return err(bad);
  }
  if (d.old.tree_size > d.new.tree_size)
    return err(`old.tree_size: ${d.old.tree_size} is larger than new.tree_size ${d.new.tree_size}`);
  if (!verifyConsistency(d.old.tree_size, d.new.tree_size, d.proof.map(h), h(d.old.root), h(d.new.root))) {
    return err(
      `proof: tree size ${d.old.tree_size} (root ${d.old.root}) is not a prefix of tree size ${d.new.tree_size} (root ${d.new.root}): the history between them was rewritten`,
    );
  }
  return ok({
    kind: "consistency",
    origin: d.origin,
    summary: `tree size ${d.old.tree_size} root ${d.old.root} is a prefix of tree size ${d.new.tree_size} root ${d.new.root}`,
  });
}
