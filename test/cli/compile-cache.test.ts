/**
 * Issue 35: a `berth` verb keeps Node's compiled code in the user's cache, on a Node that has a compile cache, and
 * nowhere else; `berth node serve` never does. Judged from outside: the built executable runs in a child process with
 * its own XDG_CACHE_HOME, and the directory is looked at afterwards. On a Node without `module.enableCompileCache`
 * (older than 22.1, this machine's first tier) the same runs must leave no directory: berth works as before.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import * as nodeModule from "node:module";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { builtPath } from "../support/built.js";

type CompileCache = { compileCacheDir: (env: NodeJS.ProcessEnv, home: string) => string | null };
const { compileCacheDir } = createRequire(import.meta.url)(
  builtPath("src/cli/entry/compile-cache.cjs"),
) as CompileCache;
const BERTH = builtPath("src/cli/entry/berth.cjs");
const nodeHasCache = typeof nodeModule.enableCompileCache === "function";
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Runs the built `berth` with `args` and a fresh cache home; the files under berth's compile cache afterwards. */
function cachedFilesAfter(
  args: string[],
  extraEnv: NodeJS.ProcessEnv = {},
): { status: number | null; files: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "berth-compile-cache-"));
  dirs.push(dir);
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: dir, BERTH_HOME: join(dir, "home"), ...extraEnv };
  delete env.NODE_COMPILE_CACHE;
  if (!("NODE_DISABLE_COMPILE_CACHE" in extraEnv)) delete env.NODE_DISABLE_COMPILE_CACHE;
  const r = spawnSync(process.execPath, [BERTH, ...args], { env, encoding: "utf8", timeout: 60_000 });
  const cache = join(dir, "berth", "compile-cache");
  const files = existsSync(cache) ? readdirSync(cache, { recursive: true, encoding: "utf8" }) : [];
  return { status: r.status, files };
}

describe("where berth keeps compiled code", () => {
  it("is the user's XDG cache when it is an absolute path, else ~/.cache, under berth/compile-cache", () => {
    expect(compileCacheDir({ XDG_CACHE_HOME: "/var/cache/me" }, "/home/me")).toBe("/var/cache/me/berth/compile-cache");
    expect(compileCacheDir({}, "/home/me")).toBe("/home/me/.cache/berth/compile-cache");
    // The XDG rules ignore a relative path: it would depend on where berth was started.
    expect(compileCacheDir({ XDG_CACHE_HOME: "cache" }, "/home/me")).toBe("/home/me/.cache/berth/compile-cache");
  });

  it("is left to Node when NODE_COMPILE_CACHE names a place", () => {
    expect(compileCacheDir({ NODE_COMPILE_CACHE: "/elsewhere" }, "/home/me")).toBeNull();
    expect(compileCacheDir({ NODE_COMPILE_CACHE: "" }, "/home/me")).toBe("/home/me/.cache/berth/compile-cache");
  });
});

describe("a berth verb's compiled code", () => {
  it(`is written to the cache by a verb ${nodeHasCache ? "on this Node" : "only on a Node that has a compile cache (this one has none)"}`, () => {
    const r = cachedFilesAfter(["--help"]);
    expect(r.status).toBe(0);
    if (nodeHasCache) expect(r.files.length).toBeGreaterThan(0);
    else expect(r.files).toEqual([]);
  });

  it("is not written when NODE_DISABLE_COMPILE_CACHE=1, as for any Node program", () => {
    const r = cachedFilesAfter(["--help"], { NODE_DISABLE_COMPILE_CACHE: "1" });
    expect(r.status).toBe(0);
    expect(r.files).toEqual([]);
  });

  it("is never written by `berth node serve`, the long-lived daemon", () => {
    const r = cachedFilesAfter(["node", "serve", "--help"]);
    expect(r.status).toBe(0);
    expect(r.files).toEqual([]);
  });
});
