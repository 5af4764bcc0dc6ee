/**
 * Test support for the confinement tests (issues 15, 33): a node daemon with its own controller and signer whose
 * cgroup directories are removed after the test (`cleanupConfined`), and its signed facts.
 */
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { removeNodeCgroups } from "./confinement-cgroups.js";
import { ALLOW_ALL, cleanup, NodeProcess, TestController } from "./harness.js";

const nodeTags: string[] = [];

export async function confinedNode(over: Partial<Parameters<typeof NodeProcess.create>[0]> = {}) {
  const ctl = new TestController();
  const signer = generateSigningKey();
  const node = await NodeProcess.create({
    controllers: [ctl.key.publicKey],
    signers: [signer.publicKey],
    permits: ALLOW_ALL,
    ...over,
  });
  nodeTags.push(node.nodeId.slice(0, 12));
  return { ctl, signer, node };
}

/** For afterEach: every daemon and agent ended, then the nodes' (empty) cgroup directories removed. */
export async function cleanupConfined(): Promise<void> {
  await cleanup();
  for (const tag of nodeTags.splice(0)) removeNodeCgroups(tag);
}

export async function factsOf(ctl: TestController, n: NodeProcess): Promise<JsonObject> {
  const d = await ctl.client.describe(n.address, null);
  if (d.kind !== "described") throw new Error(`describe: ${d.kind}`);
  return d.facts as JsonObject;
}
