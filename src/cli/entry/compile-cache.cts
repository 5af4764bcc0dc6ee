/**
 * Issue 35, a verb's start-up: Node's module compile cache (Node ≥ 22.1) for every verb but `node serve`. The CLI's
 * bundle is about 1.75 MB of JavaScript that every `berth` process compiles before it does anything; with the cache,
 * V8's code for it is written once and read on later starts (measured on Node 24 at 10,000 agents: `berth nodes list`
 * 199 → 166 ms, `berth instances` 320 → 292 ms). Node checks each entry against its source's hash, so a rebuilt or
 * upgraded berth never runs stale code from it.
 *
 * Where: the user's own cache (`$XDG_CACHE_HOME/berth/compile-cache`, else `~/.cache/berth/compile-cache`, made by
 * Node with the user's umask), never Node's default in the shared temporary directory, where another local user could
 * have made the directory first and filled it. `NODE_COMPILE_CACHE` still chooses another place, and
 * `NODE_DISABLE_COMPILE_CACHE=1` turns it off, as they do for any Node program. A cache that cannot be written (a
 * read-only home) is no error: Node says so in the result, and berth runs as it would without one.
 *
 * Not for `berth node serve`: the daemon starts once and stays up for months on small boards (issue 19: its resident
 * memory), and gains nothing from a faster second start. CommonJS, like the rest of what berth.cjs loads first.
 */
import * as nodeModule from "node:module";
import { join } from "node:path";

/** The directory berth asks Node to keep compiled code in, or null when the environment leaves it to Node. */
export function compileCacheDir(env: NodeJS.ProcessEnv, home: string): string | null {
  if (env.NODE_COMPILE_CACHE !== undefined && env.NODE_COMPILE_CACHE !== "") return null;
  const base = env.XDG_CACHE_HOME?.startsWith("/") ? env.XDG_CACHE_HOME : null;
  return join(base ?? join(home, ".cache"), "berth", "compile-cache");
}

/** Turns the cache on where this Node has one (older Nodes have no `enableCompileCache`: nothing happens). */
export function enableCompileCache(env: NodeJS.ProcessEnv, home: string): void {
  if (typeof nodeModule.enableCompileCache !== "function") return;
  const dir = compileCacheDir(env, home);
  nodeModule.enableCompileCache(...(dir === null ? [] : [dir]));
}
