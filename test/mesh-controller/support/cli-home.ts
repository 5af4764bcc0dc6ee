/**
 * A `$BERTH_HOME` for CLI-process tests: a controller key made by `berth keys new`, a signed probe package, the
 * signers and permits files, and `berth(...args)` running the built CLI as a fresh process on that home.
 */
import { join } from "node:path";
import type { SigningKey } from "../../../src/core/crypto/ed25519.js";
import { generateSigningKey } from "../../../src/keys/key-file.js";
import { MAIN, requireBuild, tempDir } from "../../mesh/harness.js";
import { runNode } from "../../support/process.js";
import { probePackage, TEST_PERMIT, writeJson } from "./package.js";

export interface CliHome {
  readonly home: string;
  readonly controllerKey: string;
  readonly signer: SigningKey;
  readonly pkgDir: string;
  berth(...args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

export async function cliHome(prefix: string, opts: { script?: string } = {}): Promise<CliHome> {
  requireBuild();
  const home = tempDir(prefix);
  const berth = (...args: string[]) => runNode([MAIN, ...args], { env: { BERTH_HOME: home } });
  const keys = await berth("keys", "new", "--json");
  if (keys.code !== 0) throw new Error(`berth keys new failed: ${keys.stderr}`);
  const controllerKey = (JSON.parse(keys.stdout) as { public_key: string }).public_key;
  const signer = generateSigningKey();
  const pkgDir = join(home, "pkg");
  probePackage(pkgDir, signer, opts.script === undefined ? {} : { script: opts.script });
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  return { home, controllerKey, signer, pkgDir, berth };
}
