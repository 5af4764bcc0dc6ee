/**
 * `berth backup FILE` / `berth restore FILE` (issue 13): consistent copies of a berth home's databases while berth
 * runs. A plain `cp` of a live database in WAL mode copies the main file without the events still in its `-wal` (it
 * lost 3 of 21 events when tried); SQLite's online backup API reads the committed state, WAL included, under a read
 * transaction. The backup is taken in one step (every page at once), so a writer in another process cannot restart
 * it half-way: what lands in FILE is exactly the database as of one commit, and its chain verifies.
 *
 * The home's databases: `controller.db` (the mesh controller, the agents registry, their chain) goes to FILE itself,
 * a plain SQLite file `berth audit verify --db FILE` reads; `k8s.db`, when the home has one, to FILE with `.k8s`
 * before its extension (`backup.db` → `backup.k8s.db`). Keys are not copied: they are secrets, never change, and are
 * backed up once, separately.
 *
 * Restore writes back through the same API, so even a database some process has open is replaced under SQLite's own
 * locks; it refuses while `berth up` runs in the home, keeps the database it replaces beside it
 * (`controller.db.before-restore-<time>`), and checks the backup's integrity before touching anything.
 */
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { chainHead, eventCount, holdsChainTables, ownChain } from "../chain/read.js";
import { openDatabase } from "../store/sqlite.js";
import { liveDaemons, liveForegroundUp, readUpState } from "./up-state.js";

/** The databases of a berth home, in the order they are copied; only the controller's must exist. */
export const HOME_DATABASES = [
  { name: "controller.db", required: true, suffix: "" },
  { name: "k8s.db", required: false, suffix: ".k8s" },
] as const;
type HomeDatabase = (typeof HOME_DATABASES)[number];

/** Copy every remaining page in one backup step: a consistent snapshot that no concurrent writer can restart. */
const ALL_PAGES = 0x7fffffff;

export class BackupError extends Error {
  override name = "BackupError";
}

/**
 * Why a PostgreSQL store is not backed up (or restored) here (issue 20): berth's backup copies SQLite files with
 * SQLite's online backup, and the controller's state is then not in the home at all. Copying the home's stale or
 * absent controller.db would look like a backup and restore nothing; the database's own tools do it properly and
 * consistently (pg_dump, or the provider's snapshots), and `berth audit verify --database URL` checks a restored copy.
 */
export function postgresStoreRefusal(verb: "backup" | "restore", redactedAddress: string): string {
  return `the controller's store is PostgreSQL (${redactedAddress}), not controller.db in the home: ${verb === "backup" ? "back it up" : "restore it"} with PostgreSQL's own tools (${verb === "backup" ? "pg_dump --format=custom" : "pg_restore"}, or your provider's snapshots), then check it with \`berth audit verify --database URL\`; nothing was done`;
}

export interface CopiedDatabase {
  readonly database: string;
  readonly file: string;
  readonly bytes: number;
  /** Events of the database's own audit chain, and its head; null for a database without a chain. */
  readonly events: number | null;
  readonly head: { seq: number; hash: string } | null;
}

/** Where a database's copy goes for the backup FILE: FILE itself for the controller's, FILE.k8s.ext for the rest. */
export function backupFileOf(file: string, db: HomeDatabase): string {
  if (db.suffix === "") return resolve(file);
  const ext = extname(file);
  return resolve(dirname(file), `${basename(file, ext)}${db.suffix}${ext}`);
}

/** What a database file holds, read-only: integrity, and the head of its own chain. */
function inspect(path: string): { events: number | null; head: { seq: number; hash: string } | null } {
  const db = openDatabase(path, { readonly: true });
  try {
    const integrity = db.pragma("integrity_check", { simple: true });
    if (integrity !== "ok") throw new BackupError(`${path} fails SQLite's integrity check (${String(integrity)})`);
    if (!holdsChainTables(db)) return { events: null, head: null };
    const own = ownChain(db);
    if (!own) return { events: 0, head: null };
    return { events: eventCount(db, own.chain_id), head: chainHead(db, own.chain_id) ?? null };
  } catch (error) {
    if (error instanceof BackupError) throw error;
    throw new BackupError(`${path} is not a readable berth database (${(error as Error).message})`);
  } finally {
    db.close();
  }
}

/** SQLite's online backup of `from` into `to` (created, or replaced under SQLite's locks when it exists). */
async function onlineCopy(from: string, to: string): Promise<void> {
  const source = openDatabase(from, { readonly: true });
  try {
    await source.backup(to, { progress: () => ALL_PAGES });
  } finally {
    source.close();
  }
}

/** Backs up every database of `home` next to FILE; refuses to overwrite an existing file unless `force`. */
export async function backupHome(home: string, file: string, options: { force: boolean }): Promise<CopiedDatabase[]> {
  const present = HOME_DATABASES.filter((db) => existsSync(join(home, db.name)));
  if (!present.some((db) => db.required))
    throw new BackupError(`${join(home, "controller.db")} does not exist: nothing to back up in ${home}`);
  if (!existsSync(dirname(resolve(file)))) throw new BackupError(`the folder of ${resolve(file)} does not exist`);
  const targets = present.map((db) => ({ db, to: backupFileOf(file, db) }));
  for (const { to } of targets)
    if (existsSync(to) && !options.force)
      throw new BackupError(`${to} already exists; choose another FILE, or --force to replace it`);
  const copied: CopiedDatabase[] = [];
  for (const { db, to } of targets) {
    // Into a new temporary file, checked, then renamed over FILE: FILE is never half a backup.
    const tmp = `${to}.partial-${process.pid}`;
    rmSync(tmp, { force: true });
    try {
      await onlineCopy(join(home, db.name), tmp);
      const seen = inspect(tmp);
      chmodSync(tmp, 0o600);
      renameSync(tmp, to);
      copied.push({ database: db.name, file: to, bytes: statSync(to).size, ...seen });
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  return copied;
}

export interface RestoredDatabase extends CopiedDatabase {
  /** The backup file it came from. */
  readonly from: string;
  /** The database that was replaced, kept beside it; null when the home had none. */
  readonly previous: string | null;
}

/** Restores `home`'s databases from the backup FILE (and its `.k8s` companion when there is one). */
export async function restoreHome(home: string, file: string, now: Date): Promise<RestoredDatabase[]> {
  const state = readUpState(home);
  if (state && (liveForegroundUp(state) || liveDaemons(state).length > 0)) {
    throw new BackupError(
      `berth up is running in ${home}; run \`berth down\` first (and stop any \`berth serve\` on this home)`,
    );
  }
  const sources = HOME_DATABASES.map((db) => ({ db, from: backupFileOf(file, db) })).filter(
    ({ db, from }) => db.required || existsSync(from),
  );
  for (const { from } of sources) if (!existsSync(from)) throw new BackupError(`backup file ${from} does not exist`);
  // Every source is checked before anything in the home changes.
  const checked = sources.map(({ db, from }) => ({ db, from, seen: inspect(from) }));
  const stamp = now.toISOString().replace(/[:.]/g, "-");
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const restored: RestoredDatabase[] = [];
  for (const { db, from, seen } of checked) {
    const live = join(home, db.name);
    let previous: string | null = null;
    if (existsSync(live)) {
      previous = `${live}.before-restore-${stamp}`;
      await onlineCopy(live, previous);
    }
    await onlineCopy(from, live);
    restored.push({ database: db.name, file: live, from, bytes: statSync(live).size, ...seen, previous });
  }
  return restored;
}
