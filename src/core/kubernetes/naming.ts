/**
 * Names, labels and annotations of binding version 1 (spec/kubernetes.md §4.2). Everything is derived from the agent
 * pubkey, so the pod name itself is the one-per-agent lock; nothing here comes from a request's own `pubkey` field.
 */
import { err, ok, type Result } from "../../kit/result.js";
import { type AgentPubkey, decodeNsec } from "../identity/nostr.js";

export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY_VALUE = "buzz-backend-kubernetes";
export const PUBKEY_LABEL = "buzz.block.xyz/agent-pubkey";
export const BINDING_LABEL = "buzz.block.xyz/binding-version";
export const PUBKEY_FULL_ANNOTATION = "buzz.block.xyz/agent-pubkey-full";
export const INTENT_ANNOTATION = "buzz.block.xyz/create-intent";
export const IMAGE_ANNOTATION = "buzz.block.xyz/image";
export const AGENT_CONTAINER = "agent";
export const POD_NAME_PREFIX = "buzz-agent-";

export type BindingVersion = "1" | "2";

/** Who a deploy is for: the derived pubkey and every name that follows from it. */
export interface AgentIdentity {
  readonly pubkey: AgentPubkey;
  readonly podName: string;
  /** The 32-hex label value (label values are capped at 63 characters, so the label cannot hold all 64). */
  readonly pubkeyLabel: string;
}

export function identityOf(pubkey: AgentPubkey): AgentIdentity {
  return { pubkey, podName: `${POD_NAME_PREFIX}${pubkey.slice(0, 12)}`, pubkeyLabel: pubkey.slice(0, 32) };
}

/** The identity, or a failure with no reason (the answer's refusal is fixed text, C1). */
export type IdentityResult = Result<AgentIdentity, void>;

/** spec/kubernetes.md §4.1: the nsec is trimmed for decoding only; a failure carries no reason outward (C1 is fixed text). */
export function identityFromNsec(nsec: string): IdentityResult {
  const decoded = decodeNsec(nsec);
  return decoded.ok ? ok(identityOf(decoded.value)) : err(undefined);
}

const PUBKEY_HEX = /^[0-9a-f]{64}$/;

/** For operator verbs given `--pubkey`: the same identity, from a 64-hex key instead of a secret. */
export function identityFromPubkeyHex(hex: string): IdentityResult {
  return PUBKEY_HEX.test(hex) ? ok(identityOf(hex as AgentPubkey)) : err(undefined);
}

/** A generation is 8 lowercase hex of a uniformly random 32-bit value (§4.2); the randomness is the caller's. */
export function generationFrom(random32: number): string {
  return (random32 >>> 0).toString(16).padStart(8, "0");
}

export function secretNameFor(identity: AgentIdentity, generation: string): string {
  return `${identity.podName}-${generation}`;
}

export function claimNameFor(identity: AgentIdentity): string {
  return `${identity.podName}-workspace`;
}

export function labelsFor(identity: AgentIdentity, binding: BindingVersion): Record<string, string> {
  return { [PUBKEY_LABEL]: identity.pubkeyLabel, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [BINDING_LABEL]: binding };
}

/** The LIST selector of §4.2: the 32-hex label plus the management marker (the binding label is not selected on). */
export function selectorFor(identity: AgentIdentity): string {
  return `${PUBKEY_LABEL}=${identity.pubkeyLabel},${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
}

/** `list` across agents selects on the marker alone. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
