/**
 * A `$BERTH_HOME` for CLI-process tests: a controller key made by `berth keys new`, a signed probe package, the
 * signers and permits files, and `berth(...args)` running the built CLI as a fresh process on that home. Its store is
 * the home's controller.db, or a PostgreSQL database of its own under BERTH_TEST_DATABASE=postgres
 * (test/support/test-database.ts): every process is given its address, and `store(fn)` opens the same store for the
 * test's own reads and planted faults (SQL with `?`, either engine).
 */
import { join } from "node:path";
import type { SigningKey } from "../../../src/core/crypto/ed25519.js";
import { generateSigningKey } from "../../../src/keys/key-file.js";
import { MAIN, requireBuild, tempDir } from "../../mesh/harness.js";
import type { StoreEngine } from "../../../src/store/engine.js";
import { openStoreEngine } from "../../../src/store/open.js";
import { runNode } from "../../support/process.js";
import { databaseEnv, testDatabaseFor } from "../../support/test-database.js";
import { probePackage, TEST_PERMIT, writeJson } from "./package.js";

export interface CliHome {
  readonly home: string;
  readonly controllerKey: string;
  readonly signer: SigningKey;
  readonly pkgDir: string;
  /** The PostgreSQL address of the store, or undefined (the home's controller.db). */
  readonly database: string | undefined;
  /** The environment of a berth process on this home and store. */
  readonly env: Record<string, string>;
  /** Runs `fn` on the store, opened for it and closed after. */
  store<T>(fn: (engine: StoreEngine) => Promise<T>): Promise<T>;
  berth(
    ...args: string[]
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

export async function cliHome(prefix: string, opts: { script?: string } = {}): Promise<CliHome> {
  requireBuild();
  const home = tempDir(prefix);
  const database = await testDatabaseFor(home);
  const env = { BERTH_HOME: home, ...databaseEnv(database) };
  const berth = (...args: string[]) => runNode([MAIN, ...args], { env });
  const store = async <T>(fn: (engine: StoreEngine) => Promise<T>): Promise<T> => {
    const engine = await openStoreEngine({ database, sqlitePath: join(home, "controller.db") });
    try {
      return await fn(engine);
    } finally {
      await engine.close();
    }
  };
  const keys = await berth("keys", "new", "--json");
  if (keys.code !== 0) throw new Error(`berth keys new failed: ${keys.stderr}`);
  const controllerKey = (JSON.parse(keys.stdout) as { public_key: string }).public_key;
  const signer = generateSigningKey();
  const pkgDir = join(home, "pkg");
  probePackage(pkgDir, signer, opts.script === undefined ? {} : { script: opts.script });
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  return { home, controllerKey, signer, pkgDir, database, env, store, berth };
}
