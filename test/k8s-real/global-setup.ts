/**
 * Starts the one real node stack of the tier (tools/k8s/stack.sh up) and stops it after the last file (down). The
 * stack's facts reach the tests through `inject("realNode")`. Outside CI a machine that cannot run it (not root, no
 * network namespaces, binaries or packages missing) skips the tier with the reason; with CI=true that fails the run.
 */
import type { TestProject } from "vitest/node";
import { type RealNode, readStackEnv, stackCheck, startStack, stopStack } from "./stack.js";

declare module "vitest" {
  export interface ProvidedContext {
    realNode: RealNode | { readonly skip: string };
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  // A developer's stack that is already up (`BERTH_NODE_STACK_ENV=$(tools/k8s/stack.sh env)`): used, never stopped.
  const existing = process.env.BERTH_NODE_STACK_ENV;
  if (existing) {
    const dir = existing.replace(/\/env$/, "");
    project.provide(
      "realNode",
      readStackEnv(existing, { dir, cgroup: process.env.BERTH_STACK_CGROUP ?? "berth-node" }),
    );
    return undefined;
  }
  const why = stackCheck();
  if (why !== null) {
    if (process.env.CI === "true") throw new Error(`the real-node tier cannot run on this CI machine:\n${why}`);
    process.stderr.write(`[k8s-real] skipped: ${why}\n`);
    project.provide("realNode", { skip: why });
    return undefined;
  }
  const node = startStack({ dir: `/tmp/berth-node-${process.pid}`, cgroup: `berth-node-${process.pid}` });
  process.stderr.write(`[k8s-real] node stack up in ${node.startMs} ms (${node.dir})\n`);
  project.provide("realNode", node);
  return async () => {
    const ms = stopStack(node);
    process.stderr.write(`[k8s-real] node stack down in ${ms} ms\n`);
  };
}
