/**
 * Image references (spec/kubernetes.md §15.4). The image runs with the agent's private key, so only a digest-pinned
 * reference is accepted: a tag is a mutable pointer. Normalisation drops the tag, so the same bytes always give the
 * same fingerprint.
 */
import type { Result } from "../../kit/result.js";
export const IMAGE_PREFILL =
  "ghcr.io/block/buzz-sprig:sha-6530b58@sha256:17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";

export type ImageResult = Result<string>;

const q = (s: string) => JSON.stringify(s);
const LOWER_HEX_64 = /^[0-9a-f]{64}$/;

/** `ref` is already trimmed and non-empty (absence is B7, decided by the config parser). */
export function parseImage(ref: string): ImageResult {
  const parts = ref.split("@");
  if (parts.length === 1) {
    return {
      ok: false,
      error: `provider_config.image ${q(ref)} is not digest-pinned: a tag is a mutable pointer, and this object runs with the agent's private key. Use name@sha256:<64 hex chars>`,
    };
  }
  if (parts.length > 2) return { ok: false, error: `provider_config.image ${q(ref)} contains more than one '@'` };
  const [nameWithTag = "", digest = ""] = parts;
  if (!digest.startsWith("sha256:"))
    return { ok: false, error: `provider_config.image digest ${q(digest)} must start with 'sha256:'` };
  // Upper-case hex would name the same bytes but fingerprint differently.
  if (!LOWER_HEX_64.test(digest.slice("sha256:".length))) {
    return {
      ok: false,
      error: `provider_config.image digest ${q(digest)} must be exactly 64 lowercase hex characters`,
    };
  }
  // Only a final `:segment` without a `/` is a tag, so a registry port (`localhost:5000/x`) survives.
  const colon = nameWithTag.lastIndexOf(":");
  const name = colon !== -1 && !nameWithTag.slice(colon + 1).includes("/") ? nameWithTag.slice(0, colon) : nameWithTag;
  if (name === "") return { ok: false, error: `provider_config.image ${q(ref)} has no repository name` };
  return { ok: true, value: `${name}@${digest}` };
}
