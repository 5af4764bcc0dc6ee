import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { consistencyProof, leafHash, treeRoot } from "../chain/merkle.js";
import { checkpointOrigin, signCheckpointNote } from "../chain/note.js";
import { signingKeyFromSeed } from "../crypto/ed25519.js";
import type { CheckpointClaim } from "../protocol/messages.js";
import { type HeldCheckpoint, judgeCheckpoint } from "./witness.js";

function keyOf(seedByte: number) {
  return signingKeyFromSeed(Buffer.alloc(32, seedByte));
}
const key = keyOf(7);
const thief = keyOf(9);
const CHAIN = "c".repeat(32);
const hashes = (n: number, salt = "") =>
  Array.from({ length: n }, (_, i) => createHash("sha256").update(`${salt}${i}`).digest("hex"));
const leaves = (hs: string[]) => hs.map(leafHash);

function heldAt(hs: string[], size: number, chain = CHAIN): HeldCheckpoint {
  const root = treeRoot(leaves(hs), size);
  const origin = checkpointOrigin(chain);
  return { origin, size, root, note: signCheckpointNote(key, { origin, size, root }) };
}

function claimOf(hs: string[], size: number, from: number, k = key, chain = CHAIN): CheckpointClaim {
  const ls = leaves(hs);
  const root = treeRoot(ls, size);
  const proof = from > 0 && from < size ? consistencyProof(ls, from, size).map((h) => h.toString("base64")) : [];
  return { note: signCheckpointNote(k, { origin: checkpointOrigin(chain), size, root }), proof_from: from, proof };
}

const history = hashes(40);
const rewritten = [...history.slice(0, 30), ...hashes(10, "rewritten")];

describe("a node witnessing its controller's checkpoints (issue 38)", () => {
  it("takes the first checkpoint from a key as it comes", () => {
    const v = judgeCheckpoint(null, claimOf(history, 20, 0), key.publicKey, true);
    expect(v).toMatchObject({ kind: "serve", accept: { size: 20, from: null } });
  });

  it("serves the checkpoint it holds unchanged, and accepts a larger tree whose proof from the held size verifies", () => {
    expect(judgeCheckpoint(heldAt(history, 20), claimOf(history, 20, 20), key.publicKey, true)).toEqual({
      kind: "serve",
      accept: null,
    });
    expect(judgeCheckpoint(heldAt(history, 20), claimOf(history, 37, 20), key.publicKey, true)).toMatchObject({
      kind: "serve",
      accept: { size: 37, from: 20 },
    });
  });

  it("refuses a rewritten tail at the same size and at a larger one: witness, naming both sizes and roots", () => {
    const same = judgeCheckpoint(heldAt(history, 40), claimOf(rewritten, 40, 40), key.publicKey, true);
    expect(same).toMatchObject({ kind: "refuse", code: "witness" });
    if (same.kind === "refuse")
      expect(same.reason).toMatch(
        /tree size 40 .* differs from the one this node holds at the same size, tree size 40 .*rewritten/,
      );
    const grown = judgeCheckpoint(
      heldAt(history, 35),
      claimOf([...rewritten, ...hashes(5, "x")], 45, 35),
      key.publicKey,
      true,
    );
    expect(grown).toMatchObject({ kind: "refuse", code: "witness" });
    if (grown.kind === "refuse")
      expect(grown.reason).toMatch(/does not extend the one this node holds, tree size 35 .*consistency proof fails/);
  });

  it("refuses an older tree than the one it holds (a store rolled back to a backup)", () => {
    const v = judgeCheckpoint(heldAt(history, 30), claimOf(history, 25, 25), key.publicKey, false);
    expect(v).toMatchObject({ kind: "refuse", code: "witness" });
    if (v.kind === "refuse")
      expect(v.reason).toMatch(/older than the one this node holds, tree size 30.*rolled back or forked/);
  });

  it("refuses another chain's checkpoint under the same key", () => {
    const v = judgeCheckpoint(heldAt(history, 30), claimOf(history, 35, 30, key, "d".repeat(32)), key.publicKey, true);
    expect(v).toMatchObject({ kind: "refuse", code: "witness" });
  });

  it("asks for a proof from the size it holds (witness_proof), which says nothing about the history", () => {
    const v = judgeCheckpoint(heldAt(history, 30), claimOf(history, 38, 20), key.publicKey, true);
    expect(v).toMatchObject({ kind: "refuse", code: "witness_proof" });
  });

  it("refuses a note not signed by the requesting key, and a mutating request without a checkpoint once it holds one", () => {
    expect(judgeCheckpoint(null, claimOf(history, 20, 0, thief), key.publicKey, true)).toMatchObject({
      kind: "refuse",
      code: "invalid_request",
    });
    expect(judgeCheckpoint(heldAt(history, 20), undefined, key.publicKey, true)).toMatchObject({
      kind: "refuse",
      code: "invalid_request",
    });
    expect(judgeCheckpoint(heldAt(history, 20), undefined, key.publicKey, false)).toEqual({
      kind: "serve",
      accept: null,
    });
    expect(judgeCheckpoint(null, undefined, key.publicKey, true)).toEqual({ kind: "serve", accept: null });
  });

  it("accepts every honest growth and refuses every rewrite of a covered event, for random sizes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 59 }),
        (held, grow, at) => {
          const all = hashes(held + grow + 1);
          const next = held + grow;
          const honest = judgeCheckpoint(
            heldAt(all, held),
            claimOf(all, Math.max(next, held), held),
            key.publicKey,
            true,
          );
          expect(honest.kind).toBe("serve");
          const i = at % held; // an event the held checkpoint covers
          const forged = [...all];
          forged[i] = createHash("sha256").update(`forged${i}`).digest("hex");
          const v = judgeCheckpoint(
            heldAt(all, held),
            claimOf(forged, Math.max(next, held), held),
            key.publicKey,
            true,
          );
          expect(v).toMatchObject({ kind: "refuse", code: "witness" });
        },
      ),
      { numRuns: 60 },
    );
  });
});
