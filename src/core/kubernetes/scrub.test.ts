import { describe, expect, it } from "vitest";
import { buildEnv } from "./env.js";
import { attemptSecrets, isSecretValue, REDACTED, scrubberFor, secretForms } from "./scrub.js";

const NSEC = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
const NSEC_HEX = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa";
const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

describe("scrubbing an attempt's secrets from server text (issue 12)", () => {
  it("the nsec is removed raw, as hex in either case, and base64-encoded as text or as key bytes", () => {
    const scrub = scrubberFor([NSEC]);
    const key = Buffer.from(NSEC_HEX, "hex");
    for (const form of [
      NSEC,
      NSEC_HEX,
      NSEC_HEX.toUpperCase(),
      b64(NSEC),
      b64(NSEC).replace(/=+$/, ""),
      b64(key),
      b64(NSEC_HEX),
    ]) {
      expect(scrub(`denied: data=${form}.`)).toBe(`denied: data=${REDACTED}.`);
    }
  });

  it("an env value is removed raw, JSON-escaped and in standard, unpadded and URL-safe base64", () => {
    const value = 'tok"en/with?+chars>>';
    const scrub = scrubberFor([value]);
    const std = b64(value);
    for (const form of [
      value,
      JSON.stringify(value).slice(1, -1),
      std,
      std.replace(/=+$/, ""),
      std.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_"),
    ]) {
      expect(scrub(`x ${form} y`), form).toBe(`x ${REDACTED} y`);
    }
  });

  it("the secret values of a built attempt are the nsec, secret-named keys and secret-looking values, never public config", () => {
    const env = buildEnv(
      {
        relay_url: "wss://relay.example/?t=abcd",
        private_key_nsec: NSEC,
        launch: {
          owner_pubkey: "a".repeat(64),
          command: "goose",
          env: { API_KEY: "sk-123456", GOOSE_PROVIDER: "anthropic", GOOSE_MODEL: "claude-sonnet-4-5" },
        },
      },
      { inactivitySeconds: 7200 },
      "0f3a91cc",
    );
    if (!env.ok) throw new Error(env.error);
    const secrets = attemptSecrets(env.value);
    expect(secrets).toEqual(
      expect.arrayContaining([NSEC, "sk-123456", "wss://relay.example/?t=abcd", "claude-sonnet-4-5"]),
    );
    // The nonce is the Secret name's suffix and the rest is public config or plain words: scrubbing them would garble
    // object names and hide nothing.
    for (const v of ["0f3a91cc", "7200", "buzz-dev-mcp", "a".repeat(64), "goose", "anthropic"])
      expect(secrets).not.toContain(v);
    expect(scrubberFor(secrets)("could not create secret buzz-agent-7e7e9c42a91b-0f3a91cc: Invalid")).toBe(
      "could not create secret buzz-agent-7e7e9c42a91b-0f3a91cc: Invalid",
    );
  });

  // issue 34: with the docs' own example (`launch.command: buzz-agent`) every error showed the pod as `[redacted]-…`.
  it("a launch command that is part of the pod name leaves the pod name readable", () => {
    const env = buildEnv(
      {
        relay_url: "wss://r.example",
        private_key_nsec: NSEC,
        launch: { owner_pubkey: "a".repeat(64), command: "buzz-agent" },
      },
      { inactivitySeconds: 7200 },
      "0f3a91cc",
    );
    if (!env.ok) throw new Error(env.error);
    const pod = "buzz-agent-7e7e9c42a91b";
    const scrub = scrubberFor(attemptSecrets(env.value), [pod, "buzz-agents-test"]);
    expect(scrub(`startup not confirmed within 25s for ${pod}: the pod is Pending`)).toBe(
      `startup not confirmed within 25s for ${pod}: the pod is Pending`,
    );
    expect(scrub(`denied: ${NSEC}`)).toBe(`denied: ${REDACTED}`);
  });

  it("a secret-named key is scrubbed whatever its value looks like; a plain key only when the value looks secret", () => {
    expect(isSecretValue("DB_PASSWORD", "hunter")).toBe(true);
    expect(isSecretValue("GH_TOKEN", "abcdefgh")).toBe(true);
    expect(isSecretValue("OPENAI_API_KEY", "sk-proj-abc")).toBe(true);
    expect(isSecretValue("NOTES", "ghp_16C7e42F292c6912E7710c838347Ae178B4a")).toBe(true);
    expect(isSecretValue("NOTES", "plain-words-only")).toBe(false);
    expect(isSecretValue("GOOSE_MODE", "auto")).toBe(false);
    expect(isSecretValue("BUZZ_ACP_AGENT_COMMAND", "Sk-1234567890")).toBe(false);
    expect(isSecretValue("API_KEY", "abc")).toBe(false);
  });

  it("a form that occurs inside the call's public names is never scrubbed, anywhere in the text", () => {
    const scrub = scrubberFor(["agent-7e7e", "Zq9-secret!"], ["buzz-agent-7e7e9c42a91b"]);
    expect(scrub("pod buzz-agent-7e7e9c42a91b: Zq9-secret!")).toBe(`pod buzz-agent-7e7e9c42a91b: ${REDACTED}`);
  });

  it("values too short to hide are left alone instead of garbling the message", () => {
    expect(secretForms("abc")).toEqual([]);
    expect(scrubberFor(["1"])("HTTP 500 at 10:01")).toBe("HTTP 500 at 10:01");
  });

  it("a value and its encodings leave no fragment whichever is found first", () => {
    const scrub = scrubberFor(["abcd", NSEC]);
    expect(scrub(`${NSEC} abcd ${b64("abcd")}`)).toBe(`${REDACTED} ${REDACTED} ${REDACTED}`);
  });
});
