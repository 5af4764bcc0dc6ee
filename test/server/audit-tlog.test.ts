/**
 * Issue 38 over the API: the controller chain's inclusion and consistency proofs (`GET /api/v1/audit/proof/…`) are
 * documents anyone checks offline with only the owner's public key — with `berth audit verify --proof` and with
 * golang.org/x/mod/sumdb/tlog (tools/tlog-verify) — and the chain's tree is served in the C2SP tlog-tiles layout, each
 * tile exactly the hashes RFC 6962 defines over the chain's event hashes. Private, validated, never a second spelling.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consistencyProof, inclusionProof, leafHash, treeRoot } from "../../src/core/chain/merkle.js";
import { checkProofDocument } from "../../src/core/chain/proof-check.js";
import { API_BASE } from "../../src/server/openapi.js";
import { berthBin } from "../support/built.js";
import { runNode } from "../support/process.js";
import { type ApiFixture, apiFixture, closeFixtures, type ErrorBody } from "./support.js";

let fx: ApiFixture;
let hashes: string[];

/** Appends `count` events to the controller chain, as any library write does. */
async function append(count: number): Promise<void> {
  const { chain, engine } = fx.state.controller.store;
  for (let i = 0; i < count; i++)
    await engine.transaction((tx) => chain.append(tx, { source: "placement", kind: "workload.place", payload: { i } }));
}

async function eventHashes(): Promise<string[]> {
  return (await fx.state.controller.store.chain.find({})).map((e) => e.hash);
}

const raw = async (url: string) => {
  const r = await fx.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${fx.token}` } });
  return { status: r.statusCode, bytes: r.rawPayload, type: String(r.headers["content-type"]), text: r.body };
};

beforeAll(async () => {
  fx = await apiFixture();
  // 600 events: two full level-0 tiles and a partial third.
  await append(600 - (await eventHashes()).length);
  hashes = await eventHashes();
}, 120_000);
afterAll(closeFixtures);

const b64 = (h: Buffer) => h.toString("base64");

describe("the controller chain's Merkle proofs and tiles over the API", () => {
  it("an inclusion proof fetched from the API verifies offline under the owner key, and not under another", async () => {
    const a = await fx.call("GET", `${API_BASE}/audit/proof/inclusion?seq=417&size=599`);
    expect(a.status, a.text.slice(0, 300)).toBe(200);
    const doc = a.body as { tree_size: number; root: string; path: string[]; event_hash: string };
    const leaves = hashes.map(leafHash);
    expect([doc.tree_size, doc.root, doc.event_hash]).toEqual([599, b64(treeRoot(leaves, 599)), hashes[417]]);
    expect(doc.path).toEqual(inclusionProof(leaves, 417, 599).map(b64));
    expect(checkProofDocument(doc, fx.state.key.publicKey)).toMatchObject({ ok: true, value: { kind: "inclusion" } });
    const other = createHash("sha256").update("another key").digest("hex");
    expect(checkProofDocument(doc, other)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^note: no signature line is by the key/),
    });
    const forged = { ...doc, event_hash: hashes[418] };
    expect(checkProofDocument(forged, fx.state.key.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^path: the inclusion proof/),
    });
  });

  it("a consistency proof fetched from the API carries both signed heads and fails once either root is not the chain's", async () => {
    const a = await fx.call("GET", `${API_BASE}/audit/proof/consistency?old=123&new=600`);
    expect(a.status, a.text.slice(0, 300)).toBe(200);
    const doc = a.body as {
      old: { tree_size: number; root: string; note: string };
      new: { tree_size: number; root: string };
      proof: string[];
    };
    const leaves = hashes.map(leafHash);
    expect([doc.old.root, doc.new.root]).toEqual([b64(treeRoot(leaves, 123)), b64(treeRoot(leaves, 600))]);
    expect(doc.proof).toEqual(consistencyProof(leaves, 123, 600).map(b64));
    expect(checkProofDocument(doc, fx.state.key.publicKey)).toMatchObject({ ok: true, value: { kind: "consistency" } });
    // A proof from another history: the old head of a tree whose event 5 differs (its note signed by the same key).
    const rewritten = await fx.call("GET", `${API_BASE}/audit/proof/consistency?old=124&new=600`);
    const r = rewritten.body as typeof doc;
    const spliced = { ...doc, old: { ...r.old, tree_size: 123 } };
    expect(checkProofDocument(spliced, fx.state.key.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^old\.note: the note signs tree size 124/),
    });
  });

  it("berth audit verify --proof checks a fetched document offline: ok under the owner key, exit 1 under another", async () => {
    const inclusion = join(fx.dir, "inclusion.json");
    const consistency = join(fx.dir, "consistency.json");
    writeFileSync(inclusion, (await fx.call("GET", `${API_BASE}/audit/proof/inclusion?seq=3`)).text);
    writeFileSync(consistency, (await fx.call("GET", `${API_BASE}/audit/proof/consistency?old=1`)).text);
    const verify = (file: string, key: string) =>
      runNode([berthBin(), "audit", "verify", "--proof", file, "--pubkey", key], {
        env: { BERTH_HOME: join(fx.dir, "elsewhere") },
      });
    const ok = await verify(inclusion, fx.state.key.publicKey);
    expect([ok.code, ok.stdout], ok.stderr).toEqual([
      0,
      expect.stringMatching(/^ok inclusion berth\/audit\/[0-9a-f]+: seq 3 \(/),
    ]);
    const ok2 = await verify(consistency, fx.state.key.publicKey);
    expect([ok2.code, ok2.stdout], ok2.stderr).toEqual([
      0,
      expect.stringMatching(/^ok consistency .*: tree size 1 root .* is a prefix of tree size 600 root/),
    ]);
    const bad = await verify(inclusion, createHash("sha256").update("x").digest("hex"));
    expect([bad.code, bad.stdout]).toEqual([
      1,
      expect.stringMatching(/FAIL proof .*inclusion\.json: note: no signature line is by the key/),
    ]);
  }, 60_000);

  const TOOL = resolve("tools/tlog-verify/bin/tlog-verify");
  it.skipIf(!existsSync(TOOL) && process.env.CI !== "true")(
    "the fetched proofs and the tlog checkpoint note verify with golang.org/x/mod/sumdb/tlog and sumdb/note",
    async () => {
      const inclusion = (await fx.call("GET", `${API_BASE}/audit/proof/inclusion?seq=511`)).body as {
        note: string;
        origin: string;
      };
      const consistency = (await fx.call("GET", `${API_BASE}/audit/proof/consistency?old=256`)).body;
      const origin = inclusion.origin;
      const blob = Buffer.concat([Buffer.from([1]), Buffer.from(fx.state.key.publicKey, "hex")]);
      const vkey = `${origin}+${createHash("sha256").update(`${origin}\n`).update(blob).digest().subarray(0, 4).toString("hex")}+${blob.toString("base64")}`;
      const r = spawnSync(TOOL, [], {
        input: JSON.stringify({ note: inclusion.note, vkey, inclusion, consistency }),
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(`${r.stdout}${r.stderr}`).toBe("ok note\nok inclusion\nok consistency\n");
      expect(r.status).toBe(0);
    },
  );

  it("serves the newest chained checkpoint as a signed note, and tiles equal to the hashes RFC 6962 defines", async () => {
    await fx.state.controller.store.chain.checkpointIfDue(true);
    hashes = await eventHashes();
    const leaves = hashes.map(leafHash);
    const cp = await raw(`${API_BASE}/audit/tlog/checkpoint`);
    expect([cp.status, cp.type]).toEqual([200, "text/plain; charset=utf-8"]);
    const [origin, size, root] = cp.text.split("\n");
    expect(origin).toMatch(/^berth\/audit\/[0-9a-f]+$/);
    expect(Number(size)).toBeGreaterThanOrEqual(600);
    expect(root).toBe(b64(treeRoot(leaves, Number(size))));

    const full = await raw(`${API_BASE}/audit/tlog/tile/0/001`);
    expect([full.status, full.type], full.text).toEqual([200, "application/octet-stream"]);
    expect(full.bytes).toEqual(Buffer.concat(leaves.slice(256, 512)));
    const partial = await raw(`${API_BASE}/audit/tlog/tile/0/002.p/7`);
    expect(partial.bytes).toEqual(Buffer.concat(leaves.slice(512, 519)));
    // Level 1: hash i is the root of the 256 leaves [256·i, 256·(i+1)).
    const level1 = await raw(`${API_BASE}/audit/tlog/tile/1/000.p/2`);
    expect(level1.bytes).toEqual(Buffer.concat([treeRoot(leaves.slice(0, 256)), treeRoot(leaves.slice(256, 512))]));
    const entries = await raw(`${API_BASE}/audit/tlog/tile/entries/000.p/3`);
    expect(entries.bytes).toEqual(
      Buffer.concat(hashes.slice(0, 3).flatMap((h) => [Buffer.from([0, 32]), Buffer.from(h, "hex")])),
    );
    // Not held yet: the third full tile, and a level-1 tile of three hashes.
    expect((await raw(`${API_BASE}/audit/tlog/tile/0/002`)).status).toBe(404);
    expect((await raw(`${API_BASE}/audit/tlog/tile/1/000.p/3`)).status).toBe(404);
  });

  it("refuses a second spelling of a tile, a percent-escaped path and out-of-range sizes, naming the field; all need the token", async () => {
    const field = async (url: string) => {
      const a = await fx.call("GET", url);
      return [a.status, (a.body as ErrorBody).error?.issues?.[0]?.path ?? (a.body as ErrorBody).error?.code];
    };
    expect(await field(`${API_BASE}/audit/tlog/tile/0/1`)).toEqual([400, "params.tile"]);
    expect(await field(`${API_BASE}/audit/tlog/tile/0/000.p/256`)).toEqual([400, "params.tile"]);
    expect(await field(`${API_BASE}/audit/tlog/tile/0/x000/001`)).toEqual([400, "params.tile"]);
    expect(await field(`${API_BASE}/audit/tlog/tile/0%2F001`)).toEqual([400, "params.tile"]);
    expect(await field(`${API_BASE}/audit/tlog/tile/%30/001`)).toEqual([400, "non_canonical_path"]);
    expect(await field(`${API_BASE}/audit/proof/inclusion?seq=-1`)).toEqual([400, "query.seq"]);
    expect(await field(`${API_BASE}/audit/proof/inclusion?seq=x`)).toEqual([400, "query.seq"]);
    expect(await field(`${API_BASE}/audit/proof/inclusion?seq=3&size=3`)).toEqual([400, "query.seq"]);
    expect(await field(`${API_BASE}/audit/proof/inclusion?seq=3&size=99999`)).toEqual([400, "query.size"]);
    expect(await field(`${API_BASE}/audit/proof/consistency?old=0`)).toEqual([400, "query.old"]);
    expect(await field(`${API_BASE}/audit/proof/consistency?old=9&new=8`)).toEqual([400, "query.old"]);
    expect(await field(`${API_BASE}/audit/proof/consistency?old=9&extra=1`)).toEqual([400, "query.extra"]);
    for (const url of [
      "/audit/proof/inclusion?seq=1",
      "/audit/proof/consistency?old=1",
      "/audit/tlog/checkpoint",
      "/audit/tlog/tile/0/000",
    ]) {
      const a = await fx.call("GET", `${API_BASE}${url}`, { token: null });
      expect([a.status, (a.body as ErrorBody).error.code], url).toEqual([401, "unauthorized"]);
    }
    const post = await fx.call("POST", `${API_BASE}/audit/tlog/tile/0/000`, { body: {} });
    expect([post.status, post.headers.allow]).toEqual([405, "GET, HEAD"]);
  });
});
