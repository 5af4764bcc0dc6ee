import { describe, expect, it } from "vitest";
import { buildEnv } from "./env.js";
import { attemptSecrets, REDACTED, scrubberFor, secretForms } from "./scrub.js";

const NSEC = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
const NSEC_HEX = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa";
const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

describe("scrubbing an attempt's secrets from server text (issue 12)", () => {
  it("the nsec is removed raw, as hex in either case, and base64-encoded as text or as key bytes", () => {
    const scrub = scrubberFor([NSEC]);
    const key = Buffer.from(NSEC_HEX, "hex");
    for (const form of [NSEC, NSEC_HEX, NSEC_HEX.toUpperCase(), b64(NSEC), b64(NSEC).replace(/=+$/, ""), b64(key), b64(NSEC_HEX)]) {
      expect(scrub(`denied: data=${form}.`)).toBe(`denied: data=${REDACTED}.`);
    }
  });

  it("an env value is removed raw, JSON-escaped and in standard, unpadded and URL-safe base64", () => {
    const value = 'tok"en/with?+chars>>';
    const scrub = scrubberFor([value]);
    const std = b64(value);
    for (const form of [value, JSON.stringify(value).slice(1, -1), std, std.replace(/=+$/, ""), std.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")]) {
      expect(scrub(`x ${form} y`), form).toBe(`x ${REDACTED} y`);
    }
  });

  it("every env value of a built attempt is secret except the public ones berth writes", () => {
    const env = buildEnv(
      { relay_url: "wss://relay.example/?t=abcd", private_key_nsec: NSEC, launch: { owner_pubkey: "a".repeat(64), command: "goose", env: { API_KEY: "sk-123456" } } },
      { inactivitySeconds: 7200 },
      "0f3a91cc",
    );
    if (!env.ok) throw new Error(env.error);
    const secrets = attemptSecrets(env.env);
    expect(secrets).toEqual(expect.arrayContaining([NSEC, "sk-123456", "wss://relay.example/?t=abcd", "goose"]));
    // The nonce is the Secret name's suffix and the rest is public config: scrubbing them would garble object names.
    for (const v of ["0f3a91cc", "7200", "buzz-dev-mcp", "a".repeat(64)]) expect(secrets).not.toContain(v);
    expect(scrubberFor(secrets)("could not create secret buzz-agent-7e7e9c42a91b-0f3a91cc: Invalid")).toBe(
      "could not create secret buzz-agent-7e7e9c42a91b-0f3a91cc: Invalid",
    );
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
