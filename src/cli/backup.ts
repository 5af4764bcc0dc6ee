/** `berth backup FILE` / `berth restore FILE`: the home's databases, copied with SQLite's online backup (src/up/backup.ts). */
import { resolve } from "node:path";
import type { Command } from "commander";
import type { CopiedDatabase } from "../up/backup.js";
import { CliError } from "./errors.js";
import { answer } from "./output.js";
import { berthHome } from "./paths.js";

const describe = (c: CopiedDatabase) => `${c.events === null ? "no audit chain" : `${c.events} events, head seq ${c.head?.seq ?? "none"}`}, ${c.bytes} bytes`;

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

export function registerBackupCommands(program: Command): void {
  program
    .command("backup <file>")
    .description("copy the home's databases (controller.db, and k8s.db as FILE.k8s.EXT) with SQLite's online backup, safe while berth runs")
    .option("--data-dir <dir>", "berth home", berthHome())
    .option("--force", "replace FILE if it exists")
    .option("--json", "one JSON document: each database copied, its events and chain head")
    .action(async (file: string, opts: { dataDir: string; force?: boolean; json?: boolean }) => {
      const { backupHome } = await import("../up/backup.js");
      const copied = await asCliError(() => backupHome(resolve(opts.dataDir), file, { force: Boolean(opts.force) }));
      const lines = copied.map((c) => `${c.database} → ${c.file} (${describe(c)})`);
      answer(opts.json, { ok: true, home: resolve(opts.dataDir), backups: copied }, `${lines.join("\n")}\nverify it with: berth audit verify --db ${copied[0]?.file} --key-file <controller.key>`);
    });

  program
    .command("restore <file>")
    .description("put a backup made by `berth backup FILE` back into the home (berth down first); the replaced databases are kept beside")
    .option("--data-dir <dir>", "berth home", berthHome())
    .option("--json", "one JSON document: each database restored and where the one it replaced was kept")
    .action(async (file: string, opts: { dataDir: string; json?: boolean }) => {
      const { restoreHome } = await import("../up/backup.js");
      const restored = await asCliError(() => restoreHome(resolve(opts.dataDir), file, new Date()));
      const lines = restored.map((r) => `${r.database} ← ${r.from} (${describe(r)})${r.previous ? `; the one it replaced is kept as ${r.previous}` : ""}`);
      answer(opts.json, { ok: true, home: resolve(opts.dataDir), restored }, lines.join("\n"));
    });
}
