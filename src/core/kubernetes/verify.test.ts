import { describe, expect, it } from "vitest";
import type { AgentPubkey } from "../identity/nostr.js";
import {
  BINDING_LABEL,
  identityFromNsec,
  identityFromPubkeyHex,
  identityOf,
  MANAGED_BY_LABEL,
  PUBKEY_FULL_ANNOTATION,
  secretNameFor,
  selectorFor,
} from "./naming.js";
import { GOLDEN_NSEC, GOLDEN_PUBKEY } from "../../../test/support/kubernetes/fixtures.js";
import { quorum, rawPod, WHO } from "../../../test/support/kubernetes/pods.js";
import { claimProblem, isOurSecret, verifyPod } from "./verify.js";

const started = { kind: "started" } as const;

describe("pod verification (spec/kubernetes.md §5.1)", () => {
  it("accepts binding versions 1 and 2", () => {
    for (const binding of ["1", "2"]) {
      const pod = rawPod();
      pod.metadata.labels = { ...pod.metadata.labels, [BINDING_LABEL]: binding };
      expect(verifyPod(quorum(pod), WHO, started).kind).toBe("verified");
    }
  });

  it.each([
    ["empty labels", () => rawPod({ labels: {} })],
    [
      "binding 999",
      () => ({
        ...rawPod(),
        metadata: { ...rawPod().metadata, labels: { ...rawPod().metadata.labels, [BINDING_LABEL]: "999" } },
      }),
    ],
    [
      "binding missing",
      () => ({
        ...rawPod(),
        metadata: { ...rawPod().metadata, labels: { [MANAGED_BY_LABEL]: "buzz-backend-kubernetes" } },
      }),
    ],
    ["another agent's full pubkey", () => rawPod({ pubkey: "f".repeat(64) })],
    ["missing identity annotation", () => rawPod({ annotations: {} })],
    [
      "managed by someone else",
      () => ({
        ...rawPod(),
        metadata: { ...rawPod().metadata, labels: { ...rawPod().metadata.labels, [MANAGED_BY_LABEL]: "berth" } },
      }),
    ],
    ["missing uid", () => rawPod({ uid: "" })],
    ["missing resourceVersion", () => rawPod({ resourceVersion: "" })],
  ])("treats a pod with %s as foreign", (_name, make) => {
    expect(verifyPod(quorum(make()), WHO, started).kind).toBe("foreign");
  });

  it("carries this observation's fence, mark, intent and Secret reference", () => {
    const obs = verifyPod(
      quorum(rawPod({ uid: "u9", resourceVersion: "77", intent: "abc", deletionTimestamp: "2026-01-01T00:00:00Z" })),
      WHO,
      started,
    );
    if (obs.kind !== "verified") throw new Error("expected verified");
    expect(obs.pod.fence).toEqual({ uid: "u9", resourceVersion: "77" });
    expect(obs.pod.deletionMarked).toBe(true);
    expect(obs.pod.recordedIntent).toBe("abc");
    expect(obs.pod.secretRef).toBe(`${WHO.podName}-0f3a91cc`);
  });
});

describe("Secret and claim ownership (spec/kubernetes.md §5.2)", () => {
  it("a Secret is ours only with marker, binding, identity, name and uid", () => {
    const meta = rawPod().metadata;
    expect(isOurSecret({ metadata: meta }, WHO)).toBe(true);
    expect(isOurSecret({ metadata: { ...meta, uid: undefined } }, WHO)).toBe(false);
    expect(isOurSecret({ metadata: { ...meta, annotations: { [PUBKEY_FULL_ANNOTATION]: "0".repeat(64) } } }, WHO)).toBe(
      false,
    );
  });

  it("claims are checked in catalogue order", () => {
    const labels = { ...rawPod().metadata.labels, [BINDING_LABEL]: "2" };
    const good = {
      metadata: { name: "c", labels, annotations: { [PUBKEY_FULL_ANNOTATION]: WHO.pubkey } },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "20Gi" } }, storageClassName: "fast" },
    };
    expect(claimProblem(good, labels, WHO, "20Gi", "fast")).toBeNull();
    expect(claimProblem({ ...good, metadata: { ...good.metadata, labels: {} } }, labels, WHO, "20Gi", null)).toBe(
      "has no ownership labels",
    );
    expect(
      claimProblem(
        { ...good, metadata: { ...good.metadata, labels: { ...labels, [BINDING_LABEL]: "1" } } },
        labels,
        WHO,
        "20Gi",
        null,
      ),
    ).toBe("already exists but is not owned by this Buzz agent");
    expect(claimProblem({ ...good, metadata: { ...good.metadata, annotations: {} } }, labels, WHO, "20Gi", null)).toBe(
      "has no identity annotation",
    );
    expect(claimProblem(good, labels, WHO, "30Gi", null)).toMatch(/different storage request/);
    expect(claimProblem(good, labels, WHO, "20Gi", "slow")).toBe("already exists with a different storage class");
    expect(
      claimProblem({ ...good, spec: { ...good.spec, accessModes: ["ReadOnlyMany"] } }, labels, WHO, "20Gi", null),
    ).toBe("does not allow ReadWriteOnce access");
    expect(claimProblem({ ...good, spec: null }, labels, WHO, "20Gi", null)).toBe("exists without a spec");
  });
});

describe("naming (spec/kubernetes.md §4)", () => {
  it("derives the golden names from the golden nsec", () => {
    const id = identityFromNsec(GOLDEN_NSEC);
    if (!id.ok) throw new Error("golden nsec refused");
    expect(id.value.pubkey).toBe(GOLDEN_PUBKEY);
    expect(id.value.podName).toBe("buzz-agent-7e7e9c42a91b");
    expect(id.value.pubkeyLabel).toBe("7e7e9c42a91bfef19fa929e5fda1b72e");
    expect(secretNameFor(id.value, "0f3a91cc")).toBe("buzz-agent-7e7e9c42a91b-0f3a91cc");
    expect(selectorFor(id.value)).toBe(
      "buzz.block.xyz/agent-pubkey=7e7e9c42a91bfef19fa929e5fda1b72e,app.kubernetes.io/managed-by=buzz-backend-kubernetes",
    );
  });

  it("tolerates surrounding whitespace on the nsec", () => {
    expect(identityFromNsec(`  ${GOLDEN_NSEC}\n`).ok).toBe(true);
  });

  it.each(["", "nsec1", "not-a-key", "npub1abc", GOLDEN_NSEC.toUpperCase(), GOLDEN_PUBKEY])(
    "refuses %j as an identity",
    (input) => {
      expect(identityFromNsec(input).ok).toBe(false);
    },
  );

  it("accepts only 64 lowercase hex as an operator-given pubkey", () => {
    expect(identityFromPubkeyHex(GOLDEN_PUBKEY).ok).toBe(true);
    expect(identityFromPubkeyHex(GOLDEN_PUBKEY.toUpperCase()).ok).toBe(false);
    expect(identityOf(GOLDEN_PUBKEY as AgentPubkey).podName).toBe("buzz-agent-7e7e9c42a91b");
  });
});
