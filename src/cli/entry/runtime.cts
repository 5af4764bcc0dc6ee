/**
 * Whether the Node running berth is one berth supports (issue 36): package.json's `engines.node`, spelled once more
 * here so that berth.cjs can ask before anything else loads (runtime.test.ts holds the two equal). CommonJS, like the
 * rest of what berth.cjs loads first.
 *
 * The test suite runs berth on this machine's Node in its first tier, which may be older (Node 20 on the CI machine):
 * it sets BERTH_UNSUPPORTED_NODE=allow (vitest.config.ts, scripts/test). Users never need it: `bash scripts/up` runs
 * berth, and the `berth` it puts on PATH, on Node 24 from its cache when the machine's Node is older.
 */

/** The oldest Node berth supports: package.json's `engines.node` without its `>=`. */
export const SUPPORTED_NODE = "22.12.0";

/** The one line berth refuses to start with on `version` (process.versions.node), or null when it is supported. */
export function runtimeRefusal(version: string, env: NodeJS.ProcessEnv): string | null {
  if (env.BERTH_UNSUPPORTED_NODE === "allow") return null;
  const have = version.split(".").map(Number);
  const want = SUPPORTED_NODE.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    const h = have[i] ?? 0;
    const w = want[i] ?? 0;
    if (h > w) return null;
    if (h < w) {
      return `berth: Node ${version} is older than berth supports (>= ${SUPPORTED_NODE}); run it through \`bash scripts/up\`, which brings Node 24 into ~/.cache/berth/node24, or install Node 22.12 or later`;
    }
  }
  return null;
}
