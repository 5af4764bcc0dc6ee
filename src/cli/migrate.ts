/**
 * `berth migrate --from sqlite:PATH --to postgres://… --reason TEXT` (issue 20, docs/ha.md "Moving an existing
 * controller"): moves a controller store from its SQLite file into an empty PostgreSQL database in one transaction,
 * keeping its store id, its leader epoch and its audit chain unbroken (the move itself is the chain's next event,
 * `controller.migrate`, with who and why). Wiring only: the copy is src/ops/migrate.ts, its rules
 * src/core/store/migrate-plan.ts.
 */
import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { CliError, describeZodIssues, invalidInput } from "./errors.js";
import { answer } from "./output.js";
import { defaultPaths } from "./paths.js";

/** Built when the verb runs: zod loads only then (issue 19). */
async function migrateFlags() {
  const { z } = await import("zod");
  return z.strictObject({
    from: z
      .string()
      .regex(/^sqlite:.+/, "must be sqlite:PATH (a berth home or its controller.db)")
      .transform((s) => s.slice("sqlite:".length)),
    to: z
      .string({ error: "is required: --to postgres://USER@HOST:PORT/DATABASE (or set BERTH_DATABASE_URL)" })
      .refine((u) => {
        try {
          const url = new URL(u);
          return (
            (url.protocol === "postgres:" || url.protocol === "postgresql:") &&
            url.hostname !== "" &&
            url.pathname.length > 1
          );
        } catch {
          return false;
        }
      }, "must be a postgres://USER@HOST:PORT/DATABASE address naming the database"),
    keyFile: z.string().min(1),
    reason: z
      .string()
      .trim()
      .min(1, "must say why the controller moves")
      .refine((r) => Buffer.byteLength(r, "utf8") <= 1024, "must be at most 1024 bytes"),
    json: z.boolean().optional(),
  });
}

/** `sqlite:DIR` names a home (its controller.db); `sqlite:FILE` the file itself. */
function sourceFile(path: string): string {
  const abs = resolve(path);
  try {
    if (statSync(abs).isDirectory()) return join(abs, "controller.db");
  } catch {
    // missing: the copy refuses it by name
  }
  return abs;
}

/**
 * The home's own Kubernetes chain (`k8s.db`, role `k8s`, its own key) is not part of the controller store, and it is
 * left where it is: it is another owner's chain, which the controller's chain cannot take in without rewriting it.
 * From the move on, Kubernetes records of the controller go to the store's chain (src/cli/k8s-audit.ts); the old ones
 * stay verifiable in the file, and may be carried into the store as a verified foreign copy (`berth audit import`).
 */
function k8sChainLeft(source: string, to: string): { path: string; verify: string; carry: string } | null {
  const home = dirname(source);
  const path = join(home, "k8s.db");
  if (!existsSync(path)) return null;
  const key = join(home, "keys", "k8s.key");
  return {
    path,
    verify: `berth audit verify --db ${path} --key-file ${key}`,
    carry: `berth audit export --db ${path} > k8s.jsonl && berth audit import k8s.jsonl --key-file ${key} --database ${to}`,
  };
}

export function registerMigrateCommands(program: Command): void {
  program
    .command("migrate")
    .description(
      "move a controller store from SQLite into an empty PostgreSQL database (same store id, epochs and chain; one transaction)",
    )
    .requiredOption("--from <store>", "the store to move: sqlite:PATH (a berth home, or its controller.db)")
    .option(
      "--to <url>",
      "the empty PostgreSQL database: postgres://USER@HOST:PORT/DATABASE (default $BERTH_DATABASE_URL)",
    )
    .option(
      "--key-file <path>",
      "the controller's identity key (owns the chain; signs the migration event)",
      defaultPaths.controllerKey(),
    )
    .requiredOption("--reason <text>", "why (chained in the new store with who ran it)")
    .option("--json", "print one JSON document")
    .action(async (raw: { from: string; to?: string; keyFile: string; reason: string; json?: boolean }) => {
      const Flags = await migrateFlags();
      const parsed = Flags.safeParse({ ...raw, to: raw.to ?? process.env.BERTH_DATABASE_URL });
      if (!parsed.success)
        throw invalidInput(
          describeZodIssues(
            "migrate",
            parsed.error.issues.map((i) => ({
              ...i,
              path: i.path.map((p) => `--${String(p).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`),
            })),
          ),
        );
      const o = parsed.data;
      const [{ loadKeyFile }, { PostgresEngine }, { migrateSqliteToEngine }, { operatorIdentity }] = await Promise.all([
        import("../keys/key-file.js"),
        import("../store/postgres-engine.js"),
        import("../ops/migrate.js"),
        import("./controller.js"),
      ]);
      const key = loadKeyFile(o.keyFile);
      let target: Awaited<ReturnType<typeof PostgresEngine.open>>;
      try {
        target = await PostgresEngine.open(o.to, { poolSize: 1 });
      } catch (error) {
        // The engine's message names the address without its password.
        throw new CliError(`migrate: ${(error as Error).message}`, 2, { kind: "database" });
      }
      const source = sourceFile(o.from);
      try {
        const r = await migrateSqliteToEngine({
          sourcePath: source,
          target,
          key,
          operator: operatorIdentity("berth migrate"),
          reason: o.reason,
          clock: Date.now,
        });
        if (r.kind === "refused") throw new CliError(`migrate: ${r.reason}`, 1, { kind: "refused" });
        const rows = Object.values(r.tables).reduce((a, b) => a + b, 0);
        const moved =
          r.source_moved_to !== null
            ? `the SQLite file was set aside as ${r.source_moved_to} (kept; no berth opens it as this store again)`
            : `warning: the SQLite file ${source} could not be set aside (${r.source_move_error}): move it away yourself, or a berth on that home would act as this store beside PostgreSQL`;
        // The address without its password, in the advice as everywhere else.
        const k8s = k8sChainLeft(source, target.location);
        answer(
          o.json,
          { ok: true, from: `sqlite:${source}`, to: target.location, ...r, k8s_chain_left: k8s },
          [
            `controller store ${r.store_id} moved to ${target.location}: ${rows} rows in ${Object.keys(r.tables).length} tables, its chain ${r.chain_id} unbroken (the move is event ${r.event.seq}, controller.migrate)`,
            moved,
            ...(k8s
              ? [
                  `the home's Kubernetes chain ${k8s.path} is left as it is (its own chain and key, not part of the store); from now on Kubernetes records go to the store's chain. Verify the old one: ${k8s.verify}; carry a verified copy into the store: ${k8s.carry}`,
                ]
              : []),
            "next: start every berth serve with --database (or BERTH_DATABASE_URL) set to this database; verify with `berth audit verify`",
          ].join("\n"),
        );
      } finally {
        await target.close();
      }
    });
}
