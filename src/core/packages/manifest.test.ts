import { describe, expect, it } from "vitest";
import { signingKeyFromSeed } from "../crypto/ed25519.js";
import {
  packageIdOf,
  parseEnvelope,
  type Statement,
  signatureReport,
  signStatement,
  verifyEnvelope,
} from "./manifest.js";

const signer = signingKeyFromSeed(new Uint8Array(32).fill(7));
const other = signingKeyFromSeed(new Uint8Array(32).fill(8));

const statement = (over: Record<string, unknown> = {}): Statement =>
  ({
    format: "berth.package.v1",
    name: "probe",
    version: "1.0.0",
    kind: "probe",
    description: "",
    files: [{ path: "bin/run.sh", sha256: "a".repeat(64), size: 10, mode: "0755" }],
    variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "bin/run.sh", args: [] }, requires: [] }],
    resources: { memory_mb: 0, cpu_millis: 0 },
    network: "none",
    secrets: [],
    requirements: [],
    preferences: [],
    policy: { min_tier: "paired", labels: [], excludes: [], sticky: false, migratable: true },
    health: null,
    ...over,
  }) as Statement;

const none = { generation: 0, subjects: [] };

describe("package statements and envelopes (§5)", () => {
  it("keeps the package id when a signature is added", () => {
    const s = statement();
    const one = { statement: s, signatures: [signStatement(signer, s)] };
    const two = { statement: s, signatures: [...one.signatures, signStatement(other, s)] };
    const a = parseEnvelope(one);
    const b = parseEnvelope(two);
    expect(a.ok && b.ok && a.value.packageId === b.value.packageId && a.value.packageId === packageIdOf(s)).toBe(true);
  });

  it("grades trust: unsigned, signed_unpinned, pinned_signer", () => {
    const s = statement();
    const trusted = new Set([signer.publicKey]);
    expect(signatureReport({ statement: s, signatures: [] }, trusted).trust).toBe("unsigned");
    expect(signatureReport({ statement: s, signatures: [signStatement(other, s)] }, trusted).trust).toBe(
      "signed_unpinned",
    );
    expect(signatureReport({ statement: s, signatures: [signStatement(signer, s)] }, trusted).trust).toBe(
      "pinned_signer",
    );
  });

  it("refuses a signature over another statement", () => {
    const s = statement();
    const sig = signStatement(signer, statement({ version: "2.0.0" }));
    expect(
      verifyEnvelope(
        { statement: s, signatures: [sig] },
        { trustedSigners: new Set([signer.publicKey]), revocations: none },
      ).ok,
    ).toBe(false);
  });

  it("refuses a revoked signer even when another trusted signature verifies", () => {
    const s = statement();
    const env = { statement: s, signatures: [signStatement(signer, s), signStatement(other, s)] };
    const v = verifyEnvelope(env, {
      trustedSigners: new Set([signer.publicKey]),
      revocations: { generation: 1, subjects: [{ kind: "signer", id: other.publicKey, reason: "lost", at_ms: 1 }] },
    });
    expect(v).toEqual({ ok: false, error: `signer '${other.publicKey}' is revoked: lost` });
  });

  it("refuses an id that differs from the requested one", () => {
    const s = statement();
    const v = verifyEnvelope(
      { statement: s, signatures: [signStatement(signer, s)] },
      { expectedId: "0".repeat(64), trustedSigners: new Set([signer.publicKey]), revocations: none },
    );
    expect(v.ok).toBe(false);
  });

  it.each([
    ["a path with ..", { files: [{ path: "../etc/passwd", sha256: "a".repeat(64), size: 1, mode: "0644" }] }],
    ["an absolute path", { files: [{ path: "/bin/sh", sha256: "a".repeat(64), size: 1, mode: "0644" }] }],
    [
      "an entry that is not pinned",
      { variants: [{ id: "v", arch: "any", os: "linux", entry: { program: "nope", args: [] }, requires: [] }] },
    ],
    ["a non-executable entry", { files: [{ path: "bin/run.sh", sha256: "a".repeat(64), size: 10, mode: "0644" }] }],
    ["an unknown member", { surprise: 1 }],
    ["a non-SemVer version", { version: "1.0" }],
    ["a fractional size", { files: [{ path: "bin/run.sh", sha256: "a".repeat(64), size: 1.5, mode: "0755" }] }],
  ])("refuses a statement with %s", (_name, over) => {
    expect(parseEnvelope({ statement: statement(over), signatures: [] }).ok).toBe(false);
  });
});
