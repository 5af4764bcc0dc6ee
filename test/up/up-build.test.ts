/**
 * scripts/up's build phase (scripts/lib/up-build.sh, issue 36): berth and its dashboard are built only when their
 * sources changed. Judged from the files in dist/: a second run with unchanged sources writes none of them (every
 * file's mtime and size as before), and a change under src/ rebuilds berth and leaves the dashboard's files alone. The
 * transpiled output runs (`berth --version`). No timing is asserted; the run command's timings live in the README.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const copy = mkdtempSync(join(tmpdir(), "berth-up-build-"));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

/** The files git knows (and new ones it would), copied; node_modules linked to the checkout's, which is only read. */
function copyCheckout(): void {
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: repo, encoding: "utf8" })
    .split("\0")
    .filter((f) => f !== "");
  for (const file of files) {
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    try {
      cpSync(join(repo, file), join(copy, file));
    } catch {
      // listed but deleted in the work tree
    }
  }
  symlinkSync(join(repo, "node_modules"), join(copy, "node_modules"));
  // git ls-files in the copy (the script hashes what git knows): a repository of its own, nothing committed.
  execFileSync("git", ["init", "-q"], { cwd: copy });
}

function build(): string {
  const run = spawnSync("bash", ["scripts/lib/up-build.sh"], {
    cwd: copy,
    encoding: "utf8",
    env: { ...process.env, BERTH_UP_LOGS: join(copy, ".logs") },
  });
  expect(run.status, run.stderr + run.stdout).toBe(0);
  return run.stdout.trim();
}

/** Every file under dist/ with its mtime and size. */
function distFiles(): Map<string, string> {
  const seen = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const s = statSync(path);
        seen.set(relative(copy, path), `${s.mtimeMs} ${s.size}`);
      }
    }
  };
  walk(join(copy, "dist"));
  return seen;
}

describe("scripts/up's build phase", () => {
  it("builds berth and the dashboard once, a second run with unchanged sources writes nothing, and a change under src/ rebuilds berth alone", () => {
    copyCheckout();
    const first = build();
    expect(first).toMatch(/^berth: build {5}berth \d+ s, dashboard \d+ s$/);
    const version = spawnSync(process.execPath, [join(copy, "dist/src/cli/entry/berth.cjs"), "--version"], {
      encoding: "utf8",
      env: { ...process.env, BERTH_UNSUPPORTED_NODE: "allow" },
    });
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/\d+\.\d+\.\d+/);

    const built = distFiles();
    expect([...built.keys()]).toContain("dist/src/cli/entry/main.js");
    expect([...built.keys()]).toContain("dist/src/cli/entry/berth.cjs");
    expect([...built.keys()]).toContain("dist/web/index.html");

    expect(build()).toBe("berth: build     berth unchanged, dashboard unchanged");
    expect(distFiles()).toEqual(built);

    const source = join(copy, "src/version.ts");
    writeFileSync(source, `${execFileSync("cat", [source], { encoding: "utf8" })}\n// changed by the test\n`);
    expect(build()).toMatch(/^berth: build {5}berth \d+ s, dashboard unchanged$/);
    const after = distFiles();
    const changed = [...after].filter(([file, stamp]) => built.get(file) !== stamp).map(([file]) => file);
    expect(changed).toContain("dist/src/version.js");
    expect(changed.filter((file) => file.startsWith("dist/web/"))).toEqual([]);
  }, 300_000);
});
