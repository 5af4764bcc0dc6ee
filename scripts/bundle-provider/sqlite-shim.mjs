// better-sqlite3 for the self-contained provider bundle (issue 18.3): the same Database class, but its native addon
// comes from bytes embedded in the bundle instead of a node_modules lookup, so a copy of the one file still opens the
// audit chain. The addon is written once to a per-user cache named by its SHA-256 (never trusted from an existing
// file whose bytes differ) and loaded with process.dlopen.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import RealDatabase from "better-sqlite3/lib/database.js";
import addonBytes from "better-sqlite3/build/Release/better_sqlite3.node";

let addon;

function candidates(name) {
  const dirs = [];
  if (process.env.XDG_CACHE_HOME) dirs.push(join(process.env.XDG_CACHE_HOME, "berth"));
  try {
    dirs.push(join(homedir(), ".cache", "berth"));
  } catch {
    // no home directory: the temporary directory below still works
  }
  dirs.push(join(tmpdir(), `berth-${process.getuid?.() ?? "user"}`));
  return dirs.map((d) => ({ dir: d, file: join(d, name) }));
}

function loadAddon() {
  if (addon) return addon;
  const sha = createHash("sha256").update(addonBytes).digest("hex");
  const name = `better_sqlite3-${process.platform}-${process.arch}-abi${process.versions.modules}-${sha.slice(0, 16)}.node`;
  let lastError;
  for (const { dir, file } of candidates(name)) {
    try {
      let ok = false;
      try {
        ok = createHash("sha256").update(readFileSync(file)).digest("hex") === sha;
      } catch {
        ok = false;
      }
      if (!ok) {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        const partial = `${file}.${process.pid}.tmp`;
        writeFileSync(partial, addonBytes, { mode: 0o600 });
        renameSync(partial, file);
      }
      const module = { exports: {} };
      process.dlopen(module, file);
      addon = module.exports;
      return addon;
    } catch (error) {
      lastError = error;
    }
  }
  throw new Error(
    `could not load the embedded SQLite addon: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
  );
}

export default class Database extends RealDatabase {
  constructor(path, options = {}) {
    super(path, { ...options, nativeBinding: options.nativeBinding ?? loadAddon() });
  }
}
