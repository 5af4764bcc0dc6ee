/**
 * Keeping the attempt's secrets out of server text (spec/kubernetes.md §17, issue 12): an admission webhook or a
 * ValidatingAdmissionPolicy may quote the Secret it refuses, so an apiserver `message` can carry the nsec or any env
 * value — and it would reach the provider's answer, `berth k8s deploy`'s error, the API's body, the logs and the signed,
 * append-only k8s chain, which cannot be redacted afterwards. Every such text passes through a `Scrubber` first.
 *
 * The forms scrubbed, for each secret value: the value itself, its JSON-escaped spelling, and its base64 encodings
 * (standard, unpadded, URL-safe), since Secret data is base64 on the wire and in admission objects; for the nsec also
 * the 32-byte key as lower and upper hex and that key's base64. Longest forms are replaced first so that a value and
 * one of its encodings cannot leave a fragment.
 *
 * Which env values count as secret (issue 34: scrubbing every value of the attempt turned the pod name into
 * `[redacted]-…` when the launch command was `buzz-agent`, the docs' own example):
 * - never the few berth writes from public inputs, whose text also names objects (the generation nonce is the Secret
 *   name's suffix; the inactivity seconds, the MCP command, the owner and allowlist pubkeys, the respond-to mode, the
 *   launch command);
 * - always a value under a key that names a secret (`…KEY`, `…TOKEN`, `…SECRET`, `…PASSWORD`, `…AUTH…`, `…PRIVATE…`,
 *   …) and an nsec, from `MIN_SCRUBBED_LENGTH` characters;
 * - otherwise only a value that looks like one: at least `MIN_PLAIN_LENGTH` characters mixing two kinds of character
 *   (lower case, upper case, digits, symbols other than the separators `-_./:`), so that plain words and commands
 *   (`goose`, `anthropic`, `wss://relay.example.org`) are left alone while `sk-ant-…`, `ghp_…` and `?token=…` are not.
 * Values shorter than `MIN_SCRUBBED_LENGTH` are never scrubbed as substrings — replacing every "1" would destroy the
 * message and hide nothing — and neither is any form that occurs inside the call's public names (pod, Secret,
 * namespace, image): that text is public anyway, and scrubbing it only garbles the answer.
 */
import { bech32 } from "@scure/base";
import type { AgentEnv } from "./env.js";

export const REDACTED = "[redacted]";
export const MIN_SCRUBBED_LENGTH = 4;
/** Below this length a value under a plain key is not secret-like (model names, modes, short words). */
export const MIN_PLAIN_LENGTH = 8;

/** Env keys whose values are public, berth-written and appear in object names or plain config. */
const PUBLIC_KEYS: ReadonlySet<string> = new Set([
  "BUZZ_MANAGED_AGENT_START_NONCE",
  "BUZZ_ACP_EXIT_AFTER_INACTIVITY",
  "BUZZ_ACP_MCP_COMMAND",
  "BUZZ_ACP_AGENT_OWNER",
  "BUZZ_ACP_RESPOND_TO",
  "BUZZ_ACP_RESPOND_TO_ALLOWLIST",
  "BUZZ_ACP_AGENT_COMMAND",
]);

/** Key names that announce a secret, matched per `_`/`-`/`.` separated word (API_KEY, GH_TOKEN, DB_PASSWORD…). */
const SECRET_KEY_WORD =
  /^(KEY|APIKEY|TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASS|PW|PWD|CREDENTIAL|CREDENTIALS|AUTH|PRIVATE|NSEC|COOKIE|SESSION|SIGNATURE|CERT|DSN|BEARER)$/;

const secretNamedKey = (key: string): boolean =>
  key
    .toUpperCase()
    .split(/[_.-]+/)
    .some((w) => SECRET_KEY_WORD.test(w));

/** Mixes at least two kinds of character, counting `-_./:` as separators rather than symbols. */
function secretLookingValue(value: string): boolean {
  if (value.length < MIN_PLAIN_LENGTH) return false;
  const kinds = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^a-zA-Z0-9\-_./:\s]/].filter((re) => re.test(value)).length;
  return kinds >= 2;
}

/** Whether an env value is scrubbed from server text (see the module comment). */
export function isSecretValue(key: string, value: string): boolean {
  if (PUBLIC_KEYS.has(key) || value.length < MIN_SCRUBBED_LENGTH) return false;
  return secretNamedKey(key) || value.trim().startsWith("nsec1") || secretLookingValue(value);
}

export type Scrubber = (text: string) => string;

const base64Forms = (bytes: Uint8Array): string[] => {
  const std = Buffer.from(bytes).toString("base64");
  const unpadded = std.replace(/=+$/, "");
  return [std, unpadded, unpadded.replace(/\+/g, "-").replace(/\//g, "_")];
};

/** The 32-byte key inside an nsec, or null when it does not decode (then only its text forms are scrubbed). */
function nsecKey(nsec: string): Uint8Array | null {
  try {
    const decoded = bech32.decode(nsec.trim().toLowerCase() as `${string}1${string}`, 90);
    const key = bech32.fromWords(decoded.words);
    return key.length === 32 ? key : null;
  } catch {
    return null;
  }
}

/** Every spelling of one secret value that server text could carry. */
export function secretForms(value: string): string[] {
  if (value.length < MIN_SCRUBBED_LENGTH) return [];
  const forms = [value, JSON.stringify(value).slice(1, -1), ...base64Forms(Buffer.from(value, "utf8"))];
  const key = value.trim().startsWith("nsec1") ? nsecKey(value) : null;
  if (key) {
    const hex = Buffer.from(key).toString("hex");
    forms.push(hex, hex.toUpperCase(), ...base64Forms(key), ...base64Forms(Buffer.from(hex, "utf8")));
  }
  return forms.filter((f) => f.length >= MIN_SCRUBBED_LENGTH);
}

/** The secret values of one attempt (`isSecretValue`), plus the nsec (also when not in env). */
export function attemptSecrets(env: AgentEnv, nsec?: string): string[] {
  const values = Object.entries(env)
    .filter(([k, v]) => isSecretValue(k, v))
    .map(([, v]) => v);
  return nsec === undefined ? values : [...values, nsec];
}

/**
 * `publicTexts`: the call's own public names (pod, Secret stem, namespace, image); a form inside one is left alone —
 * except a form of an nsec, which is never public: an nsec pasted into the namespace (a valid 63-character label) is
 * scrubbed from that name too, in the answer and in every record of the chain (issue 33 item 13).
 */
export function scrubberFor(secrets: readonly string[], publicTexts: readonly string[] = []): Scrubber {
  const isNsec = (value: string) => value.trim().startsWith("nsec1");
  const forms = [
    ...new Set([
      ...secrets.filter(isNsec).flatMap(secretForms),
      ...secrets
        .filter((v) => !isNsec(v))
        .flatMap(secretForms)
        .filter((f) => !publicTexts.some((p) => p.includes(f))),
    ]),
  ].sort((a, b) => b.length - a.length);
  if (forms.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const f of forms) if (out.includes(f)) out = out.split(f).join(REDACTED);
    return out;
  };
}
