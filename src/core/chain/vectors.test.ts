import { describe, expect, it } from "vitest";
import { signingKeyFromSeed, nodeIdOf } from "../crypto/ed25519.js";
import { signCheckpoint } from "./checkpoint.js";
import { genesisPayload, sealEvent } from "./event.js";
import { verifyEvents } from "./verify.js";

// spec/audit-chain.md §5.5: the normative test vector.
const key = signingKeyFromSeed(new Uint8Array(32).fill(1));
const chainId = "00112233445566778899aabbccddeeff";

describe("the audit chain test vector (spec/audit-chain.md §5.5)", () => {
  it("derives the owner key and owner id from a seed of 0x01 bytes", () => {
    expect(key.publicKey).toBe("8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c");
    expect(nodeIdOf(key.publicKey)).toBe("34750f98bd59fcfc946da45aaabe933b");
  });

  const genesis = sealEvent({
    chainId,
    tip: undefined,
    nowMs: 1767225600000,
    key,
    draft: {
      source: "chain",
      kind: "chain.genesis",
      payload: genesisPayload({ role: "controller", ownerKey: key.publicKey, ownerId: nodeIdOf(key.publicKey) }),
    },
  }).event;
  const second = sealEvent({
    chainId,
    tip: genesis,
    nowMs: 1767225600250,
    key,
    draft: {
      source: "trust",
      kind: "peer.tier",
      payload: { by: "peers_file", from: "discovered", node: "0123456789abcdef0123456789abcdef", to: "paired" },
    },
  }).event;

  it("reproduces the genesis payload hash, hash and signature", () => {
    expect(genesis.payload_hash).toBe("2073f22dd97337e6e29756be2e6dd8a625a8e50bae3d915d1b529c5e8e3d9a8d");
    expect(genesis.hash).toBe("67dcd710b82a49d7a6e587ecba2b8ecbbab214725e608b3bae680ea4f60bfcc5");
    expect(genesis.sig).toBe(
      "683ecaf828856d06a1ec152c637902690867cd8faeb8ab73fac3163472494b1a29f2cc3c7aae749804a9d188f5414e05078bdb1b7e2eb22ba1c4157d788e240e",
    );
  });

  it("reproduces event seq 1", () => {
    expect(second.payload_hash).toBe("4bbbd121acc7af2023eae1739987abe7243dc8d2b3e43d946146145ad6e12cac");
    expect(second.hash).toBe("7efff6be5cc3a42dc4affaf983c52dfa65ce07af14fd252f17eda2c2d97f1c37");
    expect(second.sig).toBe(
      "8c1e8662f670e22e5a3b176e80d2e307a059d3a22fbb468f933d58ed179fc9525fa34c980cd34d834e04419b9b4be3605e39f322b0c32c97a911538b80487a0c",
    );
  });

  it("reproduces the checkpoint signature over seq 1", () => {
    const cp = signCheckpoint(key, { chainId, seq: 1, hash: second.hash }, 1767225601000);
    expect(cp.sig).toBe(
      "d3d42ed40ba0346b5df42560a0c25a76c80d87fd8422ed11cd06020e668f4fe4daafc13dccb2e2836ccad2175065d78426f2736efca7f946b433c2c5e531d502",
    );
  });

  it("verifies the two vector events under the pinned owner key", () => {
    const result = verifyEvents([genesis, second], { key: key.publicKey });
    expect(result).toMatchObject({ ok: true, events: 2, head: { seq: 1, hash: second.hash }, keySelfAsserted: false });
  });
});

describe("the event header preimage", () => {
  it("is exactly the canonical JSON of the seven header members", async () => {
    const { canonicalJson } = await import("../crypto/canonical.js");
    const { taggedSha256Hex } = await import("../crypto/tagged.js");
    const { eventHashOf } = await import("./event.js");
    const header = {
      chain_id: "ab".repeat(16),
      kind: "workload.place",
      payload_hash: "cd".repeat(32),
      prev_hash: "ef".repeat(32),
      seq: 12,
      source: "placement",
      ts: 1767225600250,
    };
    expect(eventHashOf(header)).toBe(taggedSha256Hex("berth.audit.event.v1", canonicalJson(header)));
  });
});
