import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { tagged, taggedSha256Hex } from "./tagged.js";

const streamed = (body: Uint8Array) =>
  createHash("sha256").update(tagged("berth.audit.payload.v1", body)).digest("hex");

describe("tagged SHA-256", () => {
  it("hashes a string body as exactly TAG ‖ its UTF-8 bytes, whatever the characters", () => {
    for (const body of [
      "",
      "{}",
      '{"a":"é"}',
      '{"emoji":"🚢","nul":"\\u0000","cjk":"港"}',
      "a\u0000b",
      "x".repeat(100_000),
      "🚢".repeat(1000),
    ]) {
      const bytes = Buffer.from(body, "utf8");
      expect(taggedSha256Hex("berth.audit.payload.v1", body)).toBe(streamed(bytes));
      expect(taggedSha256Hex("berth.audit.payload.v1", bytes)).toBe(streamed(bytes));
    }
  });

  it("keeps domains apart: the same body under two tags hashes differently", () => {
    expect(taggedSha256Hex("berth.audit.payload.v1", "{}")).not.toBe(taggedSha256Hex("berth.audit.event.v1", "{}"));
  });
});
