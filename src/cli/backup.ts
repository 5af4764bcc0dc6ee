/**
 * `berth backup FILE` / `berth restore FILE`: the home's databases, copied with SQLite's online backup (src/up/backup.ts).
 *
 * Through a server (a context, BERTH_ADDR, the home's running serve) the server takes the online backup of its own
 * home and sends each database whole (`POST /backup`, routes/operator.ts); FILE is written on this machine, checked
 * against the SHA-256 the server gave, and never half-written. `restore` stays on the controller host by nature: it
 * replaces the databases of a stopped home, so no running server can do it, and with a server in reach it refuses.
 */
import { chmodSync, existsSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import type { CopiedDatabase } from "../up/backup.js";
import { CliError } from "./errors.js";
import { answer } from "./output.js";
import { berthHome } from "./paths.js";
import type { ServerTarget } from "./remote/http.js";

const describe = (c: CopiedDatabase) =>
  `${c.events === null ? "no audit chain" : `${c.events} events, head seq ${c.head?.seq ?? "none"}`}, ${c.bytes} bytes`;

/** A refused backup or restore is a request that could not be made (exit 2), named by what blocked it. */
async function asCliError<T>(run: () => Promise<T>): Promise<T> {
  const { BackupError } = await import("../up/backup.js");
  try {
    return await run();
  } catch (error) {
    if (error instanceof BackupError) throw new CliError(error.message, 2, { kind: "file" });
    throw error;
  }
}

interface ServerBackup {
  readonly database: string;
  readonly home: string;
  readonly bytes: number;
  readonly events: number | null;
  readonly head: { seq: number; hash: string } | null;
  readonly sha256: string;
  readonly base64: string;
}

/** The server's backup of each of its databases, written beside FILE as a local backup names them. */
async function backupThrough(
  server: ServerTarget,
  file: string,
  force: boolean,
): Promise<{ home: string; copied: CopiedDatabase[] }> {
  const [{ HOME_DATABASES, backupFileOf }, { askServer, failed }, { createHash }] = await Promise.all([
    import("../up/backup.js"),
    import("./remote/server-verb.js"),
    import("node:crypto"),
  ]);
  if (!existsSync(dirname(resolve(file))))
    throw new CliError(`the folder of ${resolve(file)} does not exist`, 2, { kind: "file" });
  for (const db of HOME_DATABASES) {
    const to = backupFileOf(file, db);
    if (existsSync(to) && !force)
      throw new CliError(`${to} already exists; choose another FILE, or --force to replace it`, 2, { kind: "file" });
  }
  let home = "";
  const copied: CopiedDatabase[] = [];
  for (const db of HOME_DATABASES) {
    const a = await askServer(server, "POST", "/backup", { database: db.name });
    // The server's store is PostgreSQL: a request that cannot be made (exit 2), as the same backup on the files.
    if (a.status === 409 && (a.body as { error?: { code?: string } } | null)?.error?.code === "postgres_store")
      throw new CliError(String((a.body as { error: { message: string } }).error.message), 2, { kind: "usage" });
    // A home without k8s.db has nothing to send for it, as a local backup skips it.
    if (a.status === 404 && !db.required) continue;
    if (a.status !== 200) throw failed(server, a);
    const b = a.body as ServerBackup;
    const bytes = Buffer.from(b.base64, "base64");
    const sum = createHash("sha256").update(bytes).digest("hex");
    if (bytes.length !== b.bytes || sum !== b.sha256)
      throw new CliError(
        `the backup of ${db.name} from ${server.url} arrived damaged (${bytes.length} bytes, SHA-256 ${sum}; the server sent ${b.bytes} bytes, ${b.sha256}); nothing was written, try again`,
        1,
        { kind: "unreachable" },
      );
    const to = backupFileOf(file, db);
    const tmp = `${to}.partial-${process.pid}`;
    try {
      writeFileSync(tmp, bytes, { mode: 0o600 });
      chmodSync(tmp, 0o600);
      renameSync(tmp, to);
    } finally {
      rmSync(tmp, { force: true });
    }
    home = b.home;
    copied.push({ database: b.database, file: to, bytes: statSync(to).size, events: b.events, head: b.head });
  }
  return { home, copied };
}

const targetFlags = (opts: { dataDir: string; local?: boolean }, cmd: Command) => ({
  local: opts.local === true,
  dataDir: opts.dataDir,
  explicitHome: cmd.getOptionValueSource("dataDir") === "cli",
});

/**
 * Refuses `verb` on the files when this invocation's controller store is PostgreSQL (--database or
 * $BERTH_DATABASE_URL, issue 20): the home's controller.db is then not the controller's state.
 */
async function refuseOnPostgres(verb: "backup" | "restore", flag: string | undefined): Promise<void> {
  const [{ databaseOf }, { parseDatabaseAddress }, { redactedUrl }, { postgresStoreRefusal }] = await Promise.all([
    import("./database.js"),
    import("../store/open.js"),
    import("../store/redact.js"),
    import("../up/backup.js"),
  ]);
  const address = databaseOf(flag);
  if (address !== undefined && parseDatabaseAddress(address, "").kind === "postgres")
    throw new CliError(postgresStoreRefusal(verb, redactedUrl(address)), 2, { kind: "usage" });
}

export function registerBackupCommands(program: Command): void {
  program
    .command("backup <file>")
    .description(
      "copy the home's databases (controller.db, and k8s.db as FILE.k8s.EXT) with SQLite's online backup, safe while berth runs; through a server, FILE is written here",
    )
    .option("--data-dir <dir>", "berth home", berthHome())
    .option("--force", "replace FILE if it exists")
    .option("--local", "back up this machine's home, not the current context's or the running `berth serve`'s")
    .option(
      "--database <url>",
      "the controller's store (default $BERTH_DATABASE_URL): a PostgreSQL store is refused, back it up with pg_dump",
    )
    .option("--json", "one JSON document: each database copied, its events and chain head")
    .action(
      async (
        file: string,
        opts: { dataDir: string; force?: boolean; local?: boolean; database?: string; json?: boolean },
        cmd: Command,
      ) => {
        const { serverFor } = await import("./remote/server-verb.js");
        const remote = await serverFor(targetFlags(opts, cmd));
        let home: string;
        let copied: CopiedDatabase[];
        if (remote) {
          ({ home, copied } = await backupThrough(remote.server, file, Boolean(opts.force)));
        } else {
          await refuseOnPostgres("backup", opts.database);
          const { backupHome } = await import("../up/backup.js");
          home = resolve(opts.dataDir);
          copied = await asCliError(() => backupHome(home, file, { force: Boolean(opts.force) }));
        }
        const lines = copied.map((c) => `${c.database} → ${c.file} (${describe(c)})`);
        answer(
          opts.json,
          { ok: true, home, backups: copied },
          `${lines.join("\n")}\nverify it with: berth audit verify --db ${copied[0]?.file} --key-file <controller.key>`,
        );
      },
    );

  program
    .command("restore <file>")
    .description(
      "put a backup made by `berth backup FILE` back into the home (berth down first); the replaced databases are kept beside. On the controller host only: never through a server",
    )
    .option("--data-dir <dir>", "berth home", berthHome())
    .option("--local", "restore into this machine's home (required when a context or BERTH_ADDR is set)")
    .option(
      "--database <url>",
      "the controller's store (default $BERTH_DATABASE_URL): a PostgreSQL store is refused, restore it with pg_restore",
    )
    .option("--json", "one JSON document: each database restored and where the one it replaced was kept")
    .action(
      async (
        file: string,
        opts: { dataDir: string; local?: boolean; database?: string; json?: boolean },
        cmd: Command,
      ) => {
        await refuseOnPostgres("restore", opts.database);
        const [{ serverFor, localOnly }, { findLocalServer }] = await Promise.all([
          import("./remote/server-verb.js"),
          import("./remote/serve-file.js"),
        ]);
        // A serve on this very home holds its databases open: --local does not make replacing them safe.
        const running = findLocalServer(resolve(opts.dataDir));
        if (running)
          throw new CliError(
            `a berth serve runs on ${resolve(opts.dataDir)} (pid ${running.pid}, ${running.url}); restore replaces the databases of a stopped home: stop it (berth down, or Ctrl-C the serve) and run berth restore again`,
            2,
            { kind: "usage" },
          );
        const remote = await serverFor(targetFlags(opts, cmd));
        if (remote)
          throw localOnly(
            "berth restore",
            "it replaces the databases of a stopped home, which no running server can do for itself",
            remote.server,
          );
        const { restoreHome } = await import("../up/backup.js");
        const restored = await asCliError(() => restoreHome(resolve(opts.dataDir), file, new Date()));
        const lines = restored.map(
          (r) =>
            `${r.database} ← ${r.from} (${describe(r)})${r.previous ? `; the one it replaced is kept as ${r.previous}` : ""}`,
        );
        answer(opts.json, { ok: true, home: resolve(opts.dataDir), restored }, lines.join("\n"));
      },
    );
}
