import { createRequire } from "node:module";
import { configDefaults, defineConfig } from "vitest/config";

/** Whether this runtime has node:sqlite (Node 24, 22.13+): `*.node24.test.ts` exercise it, and are not collected
 * where it is missing (the machine's Node 20) instead of being counted as skipped; the Node 24 tier runs them. */
function hasNodeSqlite(): boolean {
  try {
    createRequire(import.meta.url)("node:sqlite");
    return true;
  } catch {
    return false;
  }
}

// One run, two tiers: fast unit tests beside the code (src/**) and integration tiers (test/**) that start
// real components (SQLite files, OS processes, kube-apiserver + etcd). scripts/test drives it.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts", "web/src/**/*.test.ts"],
    // The real-node tier shares one node stack (its own config and global setup); scripts/test runs it after this run.
    exclude: [...configDefaults.exclude, "test/k8s-real/**", ...(hasNodeSqlite() ? [] : ["**/*.node24.test.ts"])],
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
