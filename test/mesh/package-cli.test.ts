/** `berth package init|build|sign|verify` as a user runs them: the CLI process, real files, exit codes. */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { cleanup, keyFile, MAIN, requireBuild, tempDir } from "./harness.js";

// Real daemons start in about a second each; leave room for a loaded CI machine.
vi.setConfig({ testTimeout: 90_000 });

beforeAll(requireBuild);
afterEach(cleanup);

const berth = (...args: string[]) => spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8" });

describe("berth package", () => {
  it("builds, signs and verifies a package, and refuses it once a pinned file changes or without a trusted signer", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "run.sh"), "#!/bin/sh\necho hi\n");
    chmodSync(join(dir, "run.sh"), 0o755);
    expect(berth("package", "init", dir, "--name", "hello", "--kind", "probe").status).toBe(0);
    const built = JSON.parse(
      execFileSync(process.execPath, [MAIN, "package", "build", dir, "--json"], { encoding: "utf8" }),
    ) as { package_id: string };
    expect(built.package_id).toMatch(/^[0-9a-f]{64}$/);
    const signer = generateSigningKey();
    const signed = JSON.parse(
      execFileSync(process.execPath, [MAIN, "package", "sign", dir, "--key", keyFile(signer), "--json"], {
        encoding: "utf8",
      }),
    ) as {
      package_id: string;
    };
    expect(signed.package_id).toBe(built.package_id);

    const ok = berth("package", "verify", dir, "--signer", signer.publicKey, "--json");
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true, package_id: built.package_id });

    const untrusted = berth("package", "verify", dir, "--signer", generateSigningKey().publicKey, "--json");
    expect(untrusted.status).toBe(1);
    expect(JSON.parse(untrusted.stdout).reason).toContain("not signed by a trusted signer");

    const revocations = join(dir, "revocations.json");
    writeFileSync(
      revocations,
      JSON.stringify({
        generation: 1,
        subjects: [{ kind: "package", id: built.package_id, reason: "recalled", at_ms: 1 }],
      }),
    );
    expect(berth("package", "verify", dir, "--signer", signer.publicKey, "--revocations", revocations).status).toBe(1);

    writeFileSync(join(dir, "run.sh"), "#!/bin/sh\necho HI\n");
    const tampered = berth("package", "verify", dir, "--signer", signer.publicKey, "--json");
    expect(tampered.status).toBe(1);
    expect(JSON.parse(tampered.stdout).reason).toContain("does not match its pinned sha256");
  });

  it("names the field of an invalid source manifest", () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "berth-package.src.json"),
      JSON.stringify({ name: "Bad Name", files: ["missing.sh"], variants: [] }),
    );
    const r = berth("package", "build", dir);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/variants|files|name/);
  });
});
