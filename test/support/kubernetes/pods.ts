/** Builders for pod objects as an apiserver would return them, for core tests and the fake cluster's users. */
import type { AgentPubkey } from "../../../src/core/identity/nostr.js";
import type { Startup } from "../../../src/core/kubernetes/decode.js";
import {
  BINDING_LABEL,
  identityOf,
  INTENT_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PUBKEY_FULL_ANNOTATION,
  PUBKEY_LABEL,
} from "../../../src/core/kubernetes/naming.js";
import type { PodObject } from "../../../src/core/kubernetes/objects.js";
import { fromQuorumRead, type QuorumPod } from "../../../src/core/kubernetes/quorum.js";
import { type VerifiedPod, verifyPod } from "../../../src/core/kubernetes/verify.js";
import { GOLDEN_PUBKEY } from "./fixtures.js";

export const WHO = identityOf(GOLDEN_PUBKEY as AgentPubkey);

export function rawPod(
  overrides: {
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    intent?: string | null;
    deletionTimestamp?: string;
    phase?: string;
    agentState?: Record<string, unknown>;
    secretRef?: string | null;
    pubkey?: string;
  } = {},
): PodObject {
  const labels = overrides.labels ?? {
    [PUBKEY_LABEL]: WHO.pubkeyLabel,
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    [BINDING_LABEL]: "1",
  };
  const annotations: Record<string, string> = overrides.annotations ?? {
    [PUBKEY_FULL_ANNOTATION]: overrides.pubkey ?? WHO.pubkey,
  };
  if (overrides.intent !== undefined && overrides.intent !== null) annotations[INTENT_ANNOTATION] = overrides.intent;
  const secretRef = overrides.secretRef === undefined ? `${WHO.podName}-0f3a91cc` : overrides.secretRef;
  return {
    metadata: {
      name: WHO.podName,
      uid: overrides.uid ?? "uid-1",
      resourceVersion: overrides.resourceVersion ?? "rv-1",
      labels,
      annotations,
      ...(overrides.deletionTimestamp ? { deletionTimestamp: overrides.deletionTimestamp } : {}),
    },
    spec: { containers: [{ name: "agent", envFrom: secretRef ? [{ secretRef: { name: secretRef } }] : [] }] },
    status: {
      ...(overrides.phase ? { phase: overrides.phase } : {}),
      ...(overrides.agentState ? { containerStatuses: [{ name: "agent", state: overrides.agentState }] } : {}),
    },
  };
}

export function quorum(pod: PodObject): QuorumPod {
  return fromQuorumRead(pod);
}

/** A VerifiedPod with the given startup, minted through the real verifier. */
export function verified(
  startup: Startup,
  intent: string | null,
  extra: { marked?: boolean; uid?: string; rv?: string } = {},
): VerifiedPod {
  const obs = verifyPod(
    quorum(
      rawPod({
        intent,
        uid: extra.uid ?? "uid-1",
        resourceVersion: extra.rv ?? "rv-1",
        ...(extra.marked ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
      }),
    ),
    WHO,
    startup,
  );
  if (obs.kind !== "verified") throw new Error("fixture pod failed verification");
  return obs.pod;
}

export const ALL_STARTUPS: readonly Startup[] = [
  { kind: "started" },
  { kind: "terminated" },
  { kind: "recoverable" },
  { kind: "provably-broken" },
  { kind: "pull-failing", failure: "unauthorized" },
  { kind: "pull-failing", failure: "manifest-unknown" },
  { kind: "pull-failing", failure: "arch-mismatch" },
];
