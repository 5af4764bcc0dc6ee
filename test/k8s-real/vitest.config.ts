import { defineConfig } from "vitest/config";

// The real-node tier (issue 34), run by scripts/test after the main run, in two invocations:
// - BERTH_NODE_LIFECYCLE=1: stack-lifecycle.test.ts and up-local-cluster.test.ts, each starting and stopping a stack
//   of its own and judging what is left on the host (so no other stack may be up meanwhile);
// - otherwise every other file, sharing ONE stack started by global-setup.ts, one namespace per test. Files run one
//   after another: they share one node of 2 CPUs, and a row that stops the kubelet must not overlap other pods' rows.
const lifecycle = process.env.BERTH_NODE_LIFECYCLE === "1";
export default defineConfig({
  test: {
    include: lifecycle
      ? ["test/k8s-real/stack-lifecycle.test.ts", "test/k8s-real/up-local-cluster.test.ts"]
      : ["test/k8s-real/**/*.test.ts"],
    exclude: lifecycle ? [] : ["test/k8s-real/stack-lifecycle.test.ts", "test/k8s-real/up-local-cluster.test.ts"],
    globalSetup: lifecycle ? [] : ["test/k8s-real/global-setup.ts"],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: "forks",
  },
});
