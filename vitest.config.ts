import { configDefaults, defineConfig } from "vitest/config";

// One run, two tiers: fast unit tests beside the code (src/**) and integration tiers (test/**) that start
// real components (SQLite files, OS processes, kube-apiserver + etcd). scripts/test drives it.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts", "web/src/**/*.test.ts"],
    // The real-node tier shares one node stack (its own config and global setup); scripts/test runs it after this run.
    exclude: [...configDefaults.exclude, "test/k8s-real/**"],
    // 60 s: at load 30 (CI's slow moments) an integration test that starts kube-apiserver, PostgreSQL or a daemon
    // takes twice what it does on an idle machine; several took over half of the former 30 s (CI's own run).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    reporters: ["default"],
    // The first tier runs berth on this machine's Node, older than berth supports on some (src/cli/entry/runtime.cts).
    env: { BERTH_UNSUPPORTED_NODE: "allow" },
  },
});
