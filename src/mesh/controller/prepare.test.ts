import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EMPTY_REVOCATIONS } from "../../core/governance/policy.js";
import { MANIFEST_FILE, parseEnvelope } from "../../core/packages/manifest.js";
import { generateSigningKey } from "../../keys/key-file.js";
import { buildPackage, initPackage, signPackage } from "../packages/dir.js";
import type { ControllerPolicy } from "./policy.js";
import { PACKAGE_STORE, preparePackage } from "./prepare.js";

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "berth-prepare-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function signedPackage(script: string) {
  const signer = generateSigningKey();
  const dir = temp();
  writeFileSync(join(dir, "run.sh"), script, { mode: 0o755 });
  initPackage(dir, {
    name: "probe",
    files: ["run.sh"],
    variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
  });
  buildPackage(dir);
  const { packageId } = signPackage(dir, signer);
  const policy = {
    signers: new Set([signer.publicKey]),
    permits: [],
    revocations: EMPTY_REVOCATIONS,
  } as unknown as ControllerPolicy;
  return { dir, packageId, signer, policy };
}

describe("preparing a package on the controller (issue 12)", () => {
  it("a package rewritten between its verification and the copy never lands under the verified id", () => {
    const pkg = signedPackage("#!/bin/sh\necho signed\n");
    const dataDir = temp();
    const prepared = preparePackage(pkg.dir, dataDir, pkg.policy, () => {
      // The rewrite: another signed package in the same directory, and a changed file.
      writeFileSync(join(pkg.dir, "run.sh"), "#!/bin/sh\necho swapped\n");
      buildPackage(pkg.dir);
      signPackage(pkg.dir, pkg.signer);
    });
    expect(prepared.ok).toBe(true);
    const stored = join(dataDir, PACKAGE_STORE, pkg.packageId);
    const parsed = parseEnvelope(readFileSync(join(stored, MANIFEST_FILE), "utf8"));
    expect(parsed.ok && parsed.value.packageId).toBe(pkg.packageId);
    expect(readFileSync(join(stored, "run.sh"), "utf8")).toBe("#!/bin/sh\necho signed\n");
  });

  it("a file that does not match its pin is refused and nothing is stored", () => {
    const pkg = signedPackage("#!/bin/sh\necho signed\n");
    writeFileSync(join(pkg.dir, "run.sh"), "#!/bin/sh\necho SIGNED\n");
    const dataDir = temp();
    const prepared = preparePackage(pkg.dir, dataDir, pkg.policy);
    expect(prepared).toEqual({ ok: false, error: expect.stringContaining("run.sh does not match its pinned sha256") });
  });

  it("a package in the store is prepared from its manifest; a tampered file of it is refused when served, never sent", () => {
    const pkg = signedPackage("#!/bin/sh\necho signed\n");
    const dataDir = temp();
    expect(preparePackage(pkg.dir, dataDir, pkg.policy).ok).toBe(true);
    writeFileSync(join(dataDir, PACKAGE_STORE, pkg.packageId, "run.sh"), "#!/bin/sh\necho SIGNED\n");
    const prepared = preparePackage(pkg.packageId, dataDir, pkg.policy);
    if (!prepared.ok) throw new Error(prepared.error);
    const file = prepared.value.statement.files[0] as { sha256: string };
    expect(prepared.value.source.readRange(file.sha256, 0, 64)).toBe("run.sh does not match its pinned hash");
  });

  it("a store copy is still checked against today's signers, and one holding another package's manifest is refused", () => {
    const pkg = signedPackage("#!/bin/sh\necho signed\n");
    const other = signedPackage("#!/bin/sh\necho other\n");
    const dataDir = temp();
    expect(preparePackage(pkg.dir, dataDir, pkg.policy).ok).toBe(true);
    const untrusted = { ...pkg.policy, signers: new Set<string>() } as unknown as ControllerPolicy;
    expect(preparePackage(pkg.packageId, dataDir, untrusted)).toEqual({
      ok: false,
      error: expect.stringContaining("does not verify on this controller"),
    });
    writeFileSync(
      join(dataDir, PACKAGE_STORE, pkg.packageId, MANIFEST_FILE),
      readFileSync(join(other.dir, MANIFEST_FILE)),
    );
    const both = {
      ...pkg.policy,
      signers: new Set([pkg.signer.publicKey, other.signer.publicKey]),
    } as unknown as ControllerPolicy;
    expect(preparePackage(pkg.packageId, dataDir, both)).toEqual({
      ok: false,
      error: `package ${pkg.packageId}: the store copy holds package ${other.packageId}`,
    });
  });

  it("a store copy serves the manifest it was verified from, not one written over it after the check (issue 19)", () => {
    const pkg = signedPackage("#!/bin/sh\necho signed\n");
    const dataDir = temp();
    expect(preparePackage(pkg.dir, dataDir, pkg.policy).ok).toBe(true);
    const manifestPath = join(dataDir, PACKAGE_STORE, pkg.packageId, MANIFEST_FILE);
    const verified = readFileSync(manifestPath);
    const prepared = preparePackage(pkg.packageId, dataDir, pkg.policy, () =>
      writeFileSync(manifestPath, "{ not the manifest that was checked"),
    );
    if (!prepared.ok) throw new Error(prepared.error);
    expect(Buffer.from(prepared.value.source.manifest).equals(verified)).toBe(true);
    expect(prepared.value.source.packageId).toBe(pkg.packageId);
  });

  it("a manifest prepared again unchanged is still checked against today's revocations and signers (its parse alone is kept)", () => {
    const pkg = signedPackage("#!/bin/sh\necho signed\n");
    const dataDir = temp();
    expect(preparePackage(pkg.dir, dataDir, pkg.policy).ok).toBe(true);
    expect(preparePackage(pkg.packageId, dataDir, pkg.policy).ok).toBe(true);
    const revoked = {
      ...pkg.policy,
      revocations: { ...EMPTY_REVOCATIONS, subjects: [{ kind: "package", id: pkg.packageId, reason: "withdrawn" }] },
    } as unknown as ControllerPolicy;
    expect(preparePackage(pkg.packageId, dataDir, revoked)).toEqual({
      ok: false,
      error: expect.stringContaining(`package '${pkg.packageId}' is revoked: withdrawn`),
    });
    const untrusted = { ...pkg.policy, signers: new Set<string>() } as unknown as ControllerPolicy;
    expect(preparePackage(pkg.packageId, dataDir, untrusted)).toEqual({
      ok: false,
      error: expect.stringContaining("does not verify on this controller"),
    });
    expect(preparePackage(pkg.packageId, dataDir, pkg.policy).ok).toBe(true);
  });
});

describe("a package's signatures verified once per manifest digest (issue 35)", () => {
  it("a stored package prepared again is judged by today's signers, and a forged signature under the same path is refused", () => {
    const pkg = signedPackage("#!/bin/sh\necho signed\n");
    const dataDir = temp();
    expect(preparePackage(pkg.dir, dataDir, pkg.policy).ok).toBe(true);
    // Prepared again by its id (what a placement does): the verdict kept for these bytes, trust judged now.
    expect(preparePackage(pkg.packageId, dataDir, pkg.policy).ok).toBe(true);
    const untrusted = { ...pkg.policy, signers: new Set<string>() } as unknown as ControllerPolicy;
    const refused = preparePackage(pkg.packageId, dataDir, untrusted);
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.error).toContain("signed_unpinned");
    // Other bytes at the same path (the signature's last hex digit changed): never the verdict of the first bytes.
    const path = join(dataDir, PACKAGE_STORE, pkg.packageId, MANIFEST_FILE);
    const manifest = JSON.parse(readFileSync(path, "utf8")) as { signatures: Array<{ sig: string }> };
    const sig = manifest.signatures[0]!.sig;
    manifest.signatures[0]!.sig = `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`;
    writeFileSync(path, JSON.stringify(manifest));
    const forged = preparePackage(pkg.packageId, dataDir, pkg.policy);
    expect(forged.ok).toBe(false);
    expect(!forged.ok && forged.error).toContain("unsigned");
  });
});
