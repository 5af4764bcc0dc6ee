/**
 * Throughput of the pure core (issue 3): `classify` over every row, and the create-intent fingerprint, each with a
 * baseline measured in the same run (a bare object allocation for classify; `JSON.stringify` + SHA-256 of the same
 * template bytes for the fingerprint, so the ratio shows the cost of building the template).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { utf8ToBytes } from "@noble/hashes/utils.js";
import { classify } from "../../src/core/kubernetes/classify.js";
import { parseProviderConfig } from "../../src/core/kubernetes/config.js";
import { buildEnv } from "../../src/core/kubernetes/env.js";
import { fingerprint, intentTemplate } from "../../src/core/kubernetes/intent.js";
import { agentB, configA } from "../../test/support/kubernetes/fixtures.js";
import { ALL_STARTUPS, verified } from "../../test/support/kubernetes/pods.js";
import { rate, ratio } from "../support.js";

const cfg = parseProviderConfig(configA);
if (!cfg.ok) throw new Error(cfg.error);
const env = buildEnv(agentB(), cfg.value, "0f3a91cc");
if (!env.ok) throw new Error(env.error);
const keys = Object.keys(env.value);
const desired = fingerprint(cfg.value, keys);
const pods = [
  null,
  ...ALL_STARTUPS.flatMap((s) => [
    verified(s, desired),
    verified(s, "0".repeat(64)),
    verified(s, desired, { marked: true }),
  ]),
];
const template = intentTemplate(cfg.value, keys);

console.log("classify and fingerprint throughput (vector B: 24 env keys)");
let sink = 0;
const alloc = rate("baseline: allocate a small tagged object", 2_000_000, (i) => {
  sink += { kind: "observe", name: String(i & 7) }.name.length;
});
const cls = rate(`classify (${pods.length} observations round-robin)`, 2_000_000, (i) => {
  sink += classify(pods[i % pods.length] ?? null, desired).kind.length;
});
ratio("classify / allocation baseline", cls, alloc);
const raw = rate("baseline: SHA-256 of the same template bytes", 200_000, () => {
  sink += sha256(utf8ToBytes(template))[0] ?? 0;
});
const fp = rate("fingerprint (build template + SHA-256)", 200_000, () => {
  sink += fingerprint(cfg.value, keys).length;
});
ratio("fingerprint / raw SHA-256", fp, raw);
if (sink === -1) console.log(sink);
