/**
 * A controller home with a real node daemon and one deployed mesh agent, a real `berth serve` on it, and a client home
 * holding only a copy of the token: what the remote tiers (remote.test.ts, remote-operator.test.ts) start from.
 */
import { chmodSync, copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { MAIN, NodeProcess, tempDir } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";
import { runNode, type Spawned, spawnNode } from "../support/process.js";
import { databaseEnv, testDatabaseFor } from "../support/test-database.js";

export type Answer = { code: number | null; doc: JsonObject; stdout: string; stderr: string };

export const run = async (env: NodeJS.ProcessEnv, args: readonly string[], input?: string): Promise<Answer> => {
  const r = await runNode([MAIN, ...args], {
    env: { KUBECONFIG: "/nonexistent/berth-remote-test", ...env },
    ...(input === undefined ? {} : { input }),
  });
  let doc: JsonObject = {};
  try {
    doc = JSON.parse(r.stdout) as JsonObject;
  } catch {
    // not every call asks for JSON
  }
  return { code: r.code, doc, stdout: r.stdout, stderr: r.stderr };
};

/** A controller home with a node, a signed package and one deployed mesh agent. */
export async function controllerHome(script = "#!/bin/sh\necho agent-up\nexec sleep 300\n") {
  const home = tempDir("berth-remote-home-");
  // The controller's store: SQLite in the home, or a PostgreSQL database of its own with BERTH_TEST_DATABASE=postgres.
  const env = { BERTH_HOME: home, ...databaseEnv(await testDatabaseFor(home)) };
  const keys = await run(env, ["keys", "new", "--json"]);
  const signer = generateSigningKey();
  probePackage(join(home, "pkg"), signer, { script });
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "test" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  const node = await NodeProcess.create({
    controllers: [String(keys.doc.public_key)],
    signers: [signer.publicKey],
    permits: [TEST_PERMIT],
  });
  expect((await run(env, ["nodes", "add", node.address, "--tier", "paired"])).code).toBe(0);
  const spec = join(home, "scout.yaml");
  writeFileSync(
    spec,
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n",
  );
  const deployed = await run(env, ["deploy", spec, "--json"]);
  expect([deployed.code, deployed.doc.outcome], deployed.stderr).toEqual([0, "started"]);
  return { home, env, node, spec, controllerKey: String(keys.doc.public_key) };
}

export async function serve(
  home: string,
  extra: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<{ proc: Spawned; url: string }> {
  const proc = spawnNode([MAIN, "serve", "--port", "0", "--json", "--log-level", "info", ...extra], {
    env: { BERTH_HOME: home, ...databaseEnv(await testDatabaseFor(home)), ...env },
  });
  await proc.waitForOutput(/"url"/, 30_000);
  const url = String((JSON.parse(proc.output().split("\n")[0] as string) as { url: string }).url);
  return { proc, url };
}

/** A client machine: its own home, holding only a copy of the token (0600) and its contexts. */
export function clientHome(serverHome: string): { env: NodeJS.ProcessEnv; tokenFile: string } {
  const client = tempDir("berth-remote-client-");
  const tokenFile = join(client, "token");
  copyFileSync(join(serverHome, "api.token"), tokenFile);
  chmodSync(tokenFile, 0o600);
  return { env: { BERTH_HOME: client }, tokenFile };
}
