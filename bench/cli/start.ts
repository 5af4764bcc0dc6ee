/**
 * The CLI's start-up and a placement through it (issue 19, first two rows): `berth --version`, `--help`, completion
 * and a read verb against `node -e 0` — the floor: the same node starting and doing nothing — measured interleaved in
 * the same run, so the ratio holds on a busy machine; then `berth place` through the CLI, on the home's files and
 * through a `berth serve` running on the home (the CLI finds it by serve.json), in placements per second. Figures are
 * printed, never asserted.
 *
 * Every command runs what the package's `bin` runs: dist/src/cli/entry/berth.cjs, the installed `berth`, which runs the
 * package build's bundle of the CLI (scripts/bundle-cli, built by scripts/bench and scripts/prepack) when it is fresh,
 * else main.js; the header says which it was. Before the bundle (93b196e and earlier) this timed main.js.
 *
 *   npm run build:test && node scripts/bundle-cli/build.mjs && node dist/bench/cli/start.js [--runs 15] [--place 6]
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freshCliBundle } from "../../src/cli/entry/cli-bundle.cjs";
import { cleanup, NodeProcess, requireBuild } from "../../test/mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../../test/mesh-controller/support/package.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { numberFlag } from "../support.js";

const RUNS = numberFlag("--runs", 15);
const PLACE = numberFlag("--place", 6);
/** The installed `berth` (package.json `bin`). */
const BERTH = resolve("dist/src/cli/entry/berth.cjs");
const running = freshCliBundle()
  ? "the CLI bundle, dist/src/cli-bundle/"
  : "main.js: no fresh CLI bundle (run scripts/bundle-cli/build.mjs)";

function timeOnce(args: readonly string[], env: NodeJS.ProcessEnv): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(" ")} exited ${r.status}: ${r.stderr.toString().slice(0, 300)}`);
  return ms;
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const fmt = (xs: readonly number[]) =>
  `min ${Math.min(...xs).toFixed(0)} / median ${median(xs).toFixed(0)} / max ${Math.max(...xs).toFixed(0)} ms`;

async function startUp(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "berth-bench-cli-"));
  try {
    const env = { BERTH_HOME: home, KUBECONFIG: "/nonexistent" };
    timeOnce([BERTH, "keys", "new"], env);
    const cases: Array<{ label: string; args: string[] }> = [
      { label: "node -e 0 (floor)", args: ["-e", "0"] },
      { label: "berth --version", args: [BERTH, "--version"] },
      { label: "berth --help", args: [BERTH, "--help"] },
      { label: "berth completion bash", args: [BERTH, "completion", "bash"] },
      { label: "berth unsettled --json (opens the store)", args: [BERTH, "unsettled", "--json"] },
    ];
    const times = cases.map(() => [] as number[]);
    for (let i = 0; i < RUNS + 2; i++) {
      // Interleaved: each round measures every case once, so load changes touch them all alike. Two warm-up rounds.
      cases.forEach((c, k) => {
        const ms = timeOnce(c.args, env);
        if (i >= 2) times[k]?.push(ms);
      });
    }
    const floor = median(times[0] as number[]);
    console.log(
      `\nCLI start-up of dist/src/cli/entry/berth.cjs (running ${running}), ${RUNS} runs each, interleaved (load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}):`,
    );
    cases.forEach((c, k) => {
      const t = times[k] as number[];
      console.log(
        `  ${c.label.padEnd(44)} ${fmt(t).padEnd(40)} ${(median(t) / floor).toFixed(2)}× the floor${c.label === "berth --version" ? "  (target ≤ 1.5×)" : ""}`,
      );
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

async function placements(): Promise<void> {
  if (PLACE <= 0) return;
  requireBuild();
  const home = mkdtempSync(join(tmpdir(), "berth-bench-cli-place-"));
  const env = { BERTH_HOME: home, KUBECONFIG: "/nonexistent" };
  let serve: ReturnType<typeof spawn> | null = null;
  try {
    const keys = spawnSync(process.execPath, [BERTH, "keys", "new", "--json"], {
      env: { ...process.env, ...env },
      encoding: "utf8",
    });
    const controllerKey = (JSON.parse(keys.stdout) as { public_key: string }).public_key;
    const signer = generateSigningKey();
    const pkg = join(home, "pkg");
    probePackage(pkg, signer);
    writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
    writeJson(join(home, "permits.json"), [TEST_PERMIT]);
    const node = await NodeProcess.create({
      controllers: [controllerKey],
      signers: [signer.publicKey],
      permits: [TEST_PERMIT],
    });
    timeOnce([BERTH, "nodes", "add", node.address, "--tier", "paired"], env);
    let n = 0;
    const placeAll = (extra: string[]) => {
      const start = process.hrtime.bigint();
      for (let i = 0; i < PLACE; i++) timeOnce([BERTH, "place", pkg, "--name", `w${n++}`, ...extra], env);
      return PLACE / (Number(process.hrtime.bigint() - start) / 1e9);
    };
    const onFiles = placeAll(["--local"]);
    serve = spawn(process.execPath, [BERTH, "serve", "--port", "0", "--json", "--log-level", "silent"], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "ignore"],
    });
    await new Promise<void>((resolve) => serve?.stdout?.once("data", () => resolve()));
    const throughServe = placeAll([]);
    console.log(`\nberth place through the CLI, ${PLACE} sequential placements each on one node (target ≥ 5/s):`);
    console.log(`  ${"on the home's files (--local)".padEnd(44)} ${onFiles.toFixed(2)} placements/s`);
    console.log(
      `  ${"through the berth serve on the home".padEnd(44)} ${throughServe.toFixed(2)} placements/s  (${(throughServe / onFiles).toFixed(2)}× the files)`,
    );
  } finally {
    serve?.kill("SIGTERM");
    await cleanup();
    rmSync(home, { recursive: true, force: true });
  }
}

await startUp();
await placements();
