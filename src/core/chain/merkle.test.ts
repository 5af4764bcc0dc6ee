import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { signingKeyFromSeed } from "../crypto/ed25519.js";
import {
  consistencyProof,
  EMPTY_ROOT,
  inclusionProof,
  leafHash,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from "./merkle.js";
import { checkpointOrigin, openCheckpointNote, signCheckpointNote } from "./note.js";
import {
  consistencyProofFrom,
  inclusionProofFrom,
  STORED_FROM_LEVEL,
  storedHashesFor,
  tiledReader,
  treeHeadFrom,
} from "./tree-hashes.js";

// RFC 6962 §2.1, written as the RFC states it (slices and recursion), to judge merkle.ts's unrolled version.
const sha = (...parts: Buffer[]) => createHash("sha256").update(Buffer.concat(parts)).digest();
const k = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1);
const MTH = (d: Buffer[]): Buffer =>
  d.length === 0
    ? sha()
    : d.length === 1
      ? sha(Buffer.from([0]), d[0] as Buffer)
      : sha(Buffer.from([1]), MTH(d.slice(0, k(d.length))), MTH(d.slice(k(d.length))));
const PATH = (m: number, d: Buffer[]): Buffer[] => {
  if (d.length === 1) return [];
  const kk = k(d.length);
  return m < kk ? [...PATH(m, d.slice(0, kk)), MTH(d.slice(kk))] : [...PATH(m - kk, d.slice(kk)), MTH(d.slice(0, kk))];
};
const SUBPROOF = (m: number, d: Buffer[], b: boolean): Buffer[] => {
  if (m === d.length) return b ? [] : [MTH(d)];
  const kk = k(d.length);
  return m <= kk
    ? [...SUBPROOF(m, d.slice(0, kk), b), MTH(d.slice(kk))]
    : [...SUBPROOF(m - kk, d.slice(kk), false), MTH(d.slice(0, kk))];
};
const PROOF = (m: number, d: Buffer[]) => (m === 0 || m === d.length ? [] : SUBPROOF(m, d, true));

const eventHashes = (n: number, salt: number) =>
  Array.from({ length: n }, (_, i) => sha(Buffer.from(`event ${salt} ${i}`)));
const leavesOf = (data: Buffer[]) => data.map((b) => leafHash(b.toString("hex")));
const hex = (hs: Buffer[]) => hs.map((h) => h.toString("hex"));

// One case: a tree size in 1..300, an index below it and an older size at most it.
const sizes = fc.integer({ min: 1, max: 300 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    i: fc.integer({ min: 0, max: n - 1 }),
    m: fc.integer({ min: 0, max: n }),
    salt: fc.nat(),
  }),
);

describe("the Merkle tree over the chain's event hashes (RFC 6962 / RFC 9162)", () => {
  it("hashes the empty tree to SHA-256 of nothing and a one-leaf tree to the prefixed leaf", () => {
    expect(treeRoot([]).equals(EMPTY_ROOT)).toBe(true);
    const [d] = eventHashes(1, 0) as [Buffer];
    expect(treeRoot(leavesOf([d])).equals(sha(Buffer.from([0]), d))).toBe(true);
  });

  it("computes the same tree head, audit path and consistency proof as RFC 6962's recursive definitions", () => {
    fc.assert(
      fc.property(sizes, ({ n, i, m, salt }) => {
        const data = eventHashes(n, salt);
        const leaves = leavesOf(data);
        expect(treeRoot(leaves).toString("hex")).toBe(MTH(data).toString("hex"));
        expect(treeRoot(leaves, m).toString("hex")).toBe(MTH(data.slice(0, m)).toString("hex"));
        expect(hex(inclusionProof(leaves, i))).toEqual(hex(PATH(i, data)));
        expect(hex(consistencyProof(leaves, m))).toEqual(hex(PROOF(m, data)));
      }),
      { numRuns: 100 },
    );
  });

  it("kept incrementally as stored subtree hashes, gives the reference's heads and proofs at every size, reading O(log n) hashes", () => {
    fc.assert(
      fc.property(sizes, ({ n, i, m, salt }) => {
        const data = eventHashes(n, salt);
        const stored = new Map<string, Buffer>();
        let reads = 0;
        const read = (level: number, index: number) => {
          reads++;
          const h = stored.get(`${level}/${index}`);
          if (!h) throw new Error(`no stored hash ${level}/${index}`);
          return h;
        };
        for (const [j, leaf] of leavesOf(data).entries())
          for (const s of storedHashesFor(j, leaf, read)) stored.set(`${s.level}/${s.index}`, s.hash);
        expect(stored.size).toBeLessThan(2 * n);
        reads = 0;
        expect(treeHeadFrom(read, n).equals(MTH(data))).toBe(true);
        expect(hex(inclusionProofFrom(read, i, n))).toEqual(hex(PATH(i, data)));
        expect(hex(consistencyProofFrom(read, m, n))).toEqual(hex(PROOF(m, data.slice(0, n))));
        // Each of the three walks reads at most ~log2(n)² stored hashes, never the leaves.
        const lg = Math.ceil(Math.log2(n + 1)) + 1;
        expect(reads).toBeLessThanOrEqual(3 * lg * lg);
        // Only the levels from the tiles up stored, the rest rehashed from the leaves: the same heads and proofs.
        const leaves = leavesOf(data);
        const tiled = tiledReader(
          (level, index) => {
            if (level < STORED_FROM_LEVEL) throw new Error(`level ${level} is not stored`);
            return read(level, index);
          },
          (start, count) => leaves.slice(start, start + count),
        );
        expect(treeHeadFrom(tiled, n).equals(MTH(data))).toBe(true);
        expect(hex(inclusionProofFrom(tiled, i, n))).toEqual(hex(PATH(i, data)));
        expect(hex(consistencyProofFrom(tiled, m, n))).toEqual(hex(PROOF(m, data.slice(0, n))));
      }),
      { numRuns: 150 },
    );
  });

  it("accepts every proof it builds and the reference's, against the right roots", () => {
    fc.assert(
      fc.property(sizes, ({ n, i, m, salt }) => {
        const data = eventHashes(n, salt);
        const leaves = leavesOf(data);
        const root = MTH(data);
        expect(verifyInclusion(leaves[i] as Buffer, i, n, PATH(i, data), root)).toBe(true);
        expect(verifyInclusion(leaves[i] as Buffer, i, n, inclusionProof(leaves, i), root)).toBe(true);
        expect(verifyConsistency(m, n, PROOF(m, data), MTH(data.slice(0, m)), root)).toBe(true);
        expect(verifyConsistency(m, n, consistencyProof(leaves, m), treeRoot(leaves, m), treeRoot(leaves))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("refuses a tampered path, a wrong leaf, index, size or root", () => {
    fc.assert(
      fc.property(sizes, fc.nat(), fc.integer({ min: 0, max: 255 }), ({ n, i, salt }, pick, bit) => {
        const data = eventHashes(n, salt);
        const leaves = leavesOf(data);
        const root = treeRoot(leaves);
        const path = inclusionProof(leaves, i);
        const wrongRoot = Buffer.from(root);
        wrongRoot[bit % 32] = (wrongRoot[bit % 32] as number) ^ (1 << (bit % 8));
        expect(verifyInclusion(leaves[i] as Buffer, i, n, path, wrongRoot)).toBe(false);
        expect(verifyInclusion(sha(Buffer.from("other")), i, n, path, root)).toBe(false);
        if (path.length > 0) {
          const tampered = path.map((h) => Buffer.from(h));
          const at = pick % tampered.length;
          (tampered[at] as Buffer)[bit % 32] = ((tampered[at] as Buffer)[bit % 32] as number) ^ (1 << (bit % 8));
          expect(verifyInclusion(leaves[i] as Buffer, i, n, tampered, root)).toBe(false);
          expect(verifyInclusion(leaves[i] as Buffer, i, n, path.slice(0, -1), root)).toBe(false);
          expect(verifyInclusion(leaves[i] as Buffer, i, n, [...path, root], root)).toBe(false);
        }
        if (n > 1) expect(verifyInclusion(leaves[i] as Buffer, (i + 1) % n, n, path, root)).toBe(false);
        // (A path does not bind the tree size by itself: leaf 0 of 3 and of 4 share one path shape. The signed
        // checkpoint binds size and root together, which is why a proof is checked against one.)
      }),
      { numRuns: 100 },
    );
  });

  it("refuses a consistency proof that is tampered or whose old tree is not a prefix of the new one", () => {
    fc.assert(
      fc.property(sizes, fc.nat(), fc.integer({ min: 0, max: 255 }), ({ n, m, salt }, pick, bit) => {
        const data = eventHashes(n, salt);
        const leaves = leavesOf(data);
        const root = treeRoot(leaves);
        const oldRoot = treeRoot(leaves, m);
        const proof = consistencyProof(leaves, m);
        if (proof.length > 0) {
          const tampered = proof.map((h) => Buffer.from(h));
          const at = pick % tampered.length;
          (tampered[at] as Buffer)[bit % 32] = ((tampered[at] as Buffer)[bit % 32] as number) ^ (1 << (bit % 8));
          expect(verifyConsistency(m, n, tampered, oldRoot, root)).toBe(false);
          expect(verifyConsistency(m, n, proof.slice(1), oldRoot, root)).toBe(false);
        }
        if (m > 0) {
          // The same old size over a history whose one event differs: a rewritten prefix is never consistent.
          const rewritten = [...data];
          const at = pick % m;
          rewritten[at] = sha(Buffer.from(`rewritten ${at}`));
          const forkedOld = treeRoot(leavesOf(rewritten), m);
          expect(verifyConsistency(m, n, proof, forkedOld, root)).toBe(false);
          expect(
            verifyConsistency(m, n, consistencyProof(leavesOf(rewritten), m), oldRoot, treeRoot(leavesOf(rewritten))),
          ).toBe(false);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe("the exported checkpoint note (C2SP tlog-checkpoint in a signed note)", () => {
  const key = signingKeyFromSeed(new Uint8Array(32).fill(7));
  const other = signingKeyFromSeed(new Uint8Array(32).fill(8));
  const cp = { origin: checkpointOrigin("ab".repeat(16)), size: 42, root: sha(Buffer.from("root")) };

  it("round-trips origin, size and root under the signing key, in the three-line form", () => {
    const note = signCheckpointNote(key, cp);
    expect(note).toMatch(
      /^berth\/audit\/[0-9a-f]{32}\n42\n[A-Za-z0-9+/]{43}=\n\n\u2014 berth\/audit\/[0-9a-f]{32} [A-Za-z0-9+/]{91}=?\n$/,
    );
    const opened = openCheckpointNote(note, key.publicKey);
    expect(opened).toMatchObject({ ok: true, value: { origin: cp.origin, size: 42 } });
    expect(opened.ok && opened.value.root.equals(cp.root)).toBe(true);
  });

  it("refuses another key, an edited size or root, and a note without its signature", () => {
    const note = signCheckpointNote(key, cp);
    expect(openCheckpointNote(note, other.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/no signature line is by the key/),
    });
    expect(openCheckpointNote(note.replace("\n42\n", "\n43\n"), key.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/does not verify/),
    });
    const edited = note.replace(cp.root.toString("base64"), sha(Buffer.from("x")).toString("base64"));
    expect(openCheckpointNote(edited, key.publicKey).ok).toBe(false);
    expect(openCheckpointNote(note.split("\n\n")[0] as string, key.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/blank line/),
    });
    expect(openCheckpointNote(note.replace("\n42\n", "\nx\n"), key.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/line 2 \(tree size\)/),
    });
  });
});
