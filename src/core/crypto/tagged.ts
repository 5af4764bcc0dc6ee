/**
 * Domain separation (spec/audit-chain.md §5, §5.4): every hashed or signed document is prefixed by its own
 * ASCII tag and one 0x00 byte, so a signature made for one purpose can never be replayed as another.
 */
import { createHash, hash as oneShotHash } from "node:crypto";

export const DOMAIN_TAGS = [
  "berth.audit.payload.v1",
  "berth.audit.event.v1",
  "berth.audit.sig.v1",
  "berth.audit.checkpoint.v1",
  "berth.audit.sth.v1",
  "berth.ctl.request.v1",
  "berth.ctl.response.v1",
  "berth.facts.v1",
  "berth.package.v1",
  "berth.package.id.v1",
  // berth's mesh agents (issue 7): the create-intent fingerprint of a mesh agent's configuration.
  "berth.agent.intent.v1",
  // issue 35: the gate's verdicts over a placement's view, one document whose hash the decision event carries.
  "berth.gate.summary.v1",
  // issue 35: a placement decision's candidate reports, one document whose hash the decision event carries.
  "berth.placement.candidates.v1",
] as const;
export type DomainTag = (typeof DOMAIN_TAGS)[number];

const prefixes = new Map<DomainTag, Buffer>();

/** TAG(s): the ASCII tag and a 0x00 byte, built once per tag. */
export function tagPrefix(tag: DomainTag): Buffer {
  let prefix = prefixes.get(tag);
  if (!prefix) {
    prefix = Buffer.concat([Buffer.from(tag, "ascii"), Buffer.from([0])]);
    prefixes.set(tag, prefix);
  }
  return prefix;
}

/** TAG(s) ‖ body: the ASCII tag, a 0x00 byte, then the body bytes. */
export function tagged(tag: DomainTag, body: string | Uint8Array): Buffer {
  const bodyBytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return Buffer.concat([tagPrefix(tag), bodyBytes]);
}

export function sha256(data: Uint8Array | string): Buffer {
  return createHash("sha256").update(data).digest();
}

/**
 * TAG(s) as text: the tag is ASCII and U+0000 encodes as the single byte 0x00 in UTF-8, so the UTF-8 of
 * `${tagText(s)}${body}` is exactly TAG(s) ‖ UTF-8(body).
 */
const tagText = (tag: DomainTag): string => `${tag}\u0000`;

/**
 * SHA-256 of TAG(s) ‖ body. A string body is hashed in one call (node:crypto `hash`) over the text above: the audit
 * chain hashes twice per event, and a Hash object per call cost more than the hashing of a short payload (issue 19).
 */
export function taggedSha256Hex(tag: DomainTag, body: string | Uint8Array): string {
  if (typeof body === "string") return oneShotHash("sha256", tagText(tag) + body, "hex");
  return createHash("sha256").update(tagPrefix(tag)).update(body).digest("hex");
}
