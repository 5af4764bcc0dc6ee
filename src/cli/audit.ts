/**
 * `berth audit verify|tail|export|import|checkpoint|reseal`: reading and proving the signed audit chain.
 * (About 820 lines, one concept: the one verb group of the audit chain; each subcommand's options and output are
 * registered together so `berth audit --help` and the file read the same.)
 */
import { existsSync, readFileSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { type Command, Option } from "commander";
import type { SignedCheckpoint } from "../core/chain/checkpoint.js";
import type { SealedEvent } from "../core/chain/event.js";
import type { ChainTreeView } from "../core/chain/tree-checkpoint.js";
import type { VerifyResult } from "../core/chain/verify.js";
import type { Db } from "../store/sqlite.js";
import type * as AuditDeps from "./audit-deps.js";
import { againstCheckpoint, registerMerkleCommands, verifyProofFile } from "./audit-merkle.js";
import type * as AuditRemote from "./audit-remote.js";
import { registerAuditWitnesses } from "./audit-witnesses.js";
import {
  CHAIN_BROKEN_ADVICE,
  CliError,
  describeZodIssues,
  homeMissing,
  invalidInput,
  noHome,
  wrongKeyAdvice,
} from "./errors.js";
import { answer } from "./output.js";
import { berthHome, defaultPaths } from "./paths.js";
import type { ServerTarget } from "./remote/http.js";

// The chain, store and key libraries, loaded when an audit verb runs (issue 19: registration stays light).
let d: typeof AuditDeps;
const load = async () => {
  d = await import("./audit-deps.js");
  return d;
};

/**
 * One spelling for the home everywhere (issue 13): `--data-dir DIR` reads DIR/controller.db; `--db FILE` (hidden, the
 * old spelling) names a database file directly and wins when both are given.
 */
const DB_ALIAS = () => new Option("--db <path>", "a berth database file (instead of --data-dir)").hideHelp();
const dbPath = (opts: { db?: string; dataDir?: string }) =>
  opts.db ?? join(opts.dataDir ?? berthHome(), "controller.db");

const LOCAL = () =>
  new Option("--local", "read this machine's files, not the current context's or the running `berth serve`'s");

/**
 * Issue 13: the server these verbs talk to, as every verb finds it (a context, BERTH_ADDR, the home's running serve),
 * or null for the files. A database named with --db is a file on this machine.
 */
async function auditServer(
  opts: { db?: string; dataDir?: string; local?: boolean },
  cmd: Command,
): Promise<{ t: ServerTarget; r: typeof AuditRemote } | null> {
  if (opts.db !== undefined) return null;
  const { serverFor } = await import("./remote/server-verb.js");
  const remote = await serverFor({
    local: opts.local === true,
    ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
    explicitHome: cmd.getOptionValueSource("dataDir") === "cli",
  });
  return remote ? { t: remote.server, r: await import("./audit-remote.js") } : null;
}

import { stderrPalette, stdoutPalette } from "./style.js";
import { renderTable } from "./table.js";

function openExisting(path: string, readonly = true): Db {
  if (!existsSync(path)) {
    // Issue 36: a home that is not there is said as such (where berth looked, how to start one).
    if (homeMissing(dirname(path))) throw noHome(dirname(path));
    throw new CliError(
      `database ${path} does not exist; pass --data-dir with a berth home (or --db with the path of a berth database)`,
    );
  }
  let db: Db;
  try {
    db = d.openDatabase(path, { readonly });
  } catch (error) {
    throw new CliError(`cannot open database ${path}: ${(error as Error).message}`);
  }
  try {
    d.assertSchemaNotNewer(db, "audit", d.CHAIN_SCHEMA_VERSION);
  } catch (error) {
    db.close();
    throw new CliError(`${path}: ${(error as Error).message}`);
  }
  return db;
}

/**
 * The database a reading verb reads: with `--database` / $BERTH_DATABASE_URL naming PostgreSQL (issue 20), an
 * in-memory copy of its chains (src/chain/mirror.ts) that the same code reads; else the SQLite file.
 */
async function openForReading(opts: { db?: string; dataDir?: string; database?: string }): Promise<Db> {
  const address = opts.db ? undefined : await postgresAddress(opts.database);
  if (address === undefined) return openExisting(dbPath(opts));
  const [{ openStoreEngine }, { ChainMirror }] = await Promise.all([
    import("../store/open.js"),
    import("../chain/mirror.js"),
  ]);
  let engine: Awaited<ReturnType<typeof openStoreEngine>>;
  try {
    engine = await openStoreEngine({ database: address, sqlitePath: dbPath(opts) });
  } catch (error) {
    // The engine names the address without its password.
    throw new CliError((error as Error).message, 2, { kind: "database" });
  }
  try {
    const mirror = new ChainMirror(engine);
    await mirror.sync();
    return mirror.db;
  } finally {
    await engine.close();
  }
}

/** The PostgreSQL address this verb was given (flag or environment), or undefined for a SQLite file. */
async function postgresAddress(flag: string | undefined): Promise<string | undefined> {
  const { databaseOf } = await import("./database.js");
  const address = databaseOf(flag);
  return address !== undefined && /^postgres(ql)?:\/\//i.test(address) ? address : undefined;
}

/**
 * Runs `fn` on the PostgreSQL store this verb names (issue 20), or returns undefined when it names none (a SQLite
 * file: the caller's own path). The engine is opened for the call and closed after.
 */
async function onPostgres<T>(
  opts: { db?: string; database?: string },
  fn: (engine: import("../store/engine.js").StoreEngine) => Promise<T>,
): Promise<T | undefined> {
  const address = opts.db === undefined ? await postgresAddress(opts.database) : undefined;
  if (address === undefined) return undefined;
  const { openStoreEngine } = await import("../store/open.js");
  let engine: Awaited<ReturnType<typeof openStoreEngine>>;
  try {
    engine = await openStoreEngine({ database: address, sqlitePath: "" });
  } catch (error) {
    throw new CliError((error as Error).message, 2, { kind: "database" });
  }
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

function pickChain(db: Db, chain: string | undefined): string {
  let chains: ReturnType<typeof AuditDeps.listChains>;
  try {
    chains = d.listChains(db);
  } catch {
    throw new CliError("this database holds no audit chain (no audit_chain table)");
  }
  if (chain) {
    if (!chains.some((c) => c.chain_id === chain))
      throw new CliError(
        `chain ${chain} is not in this database; it holds ${chains.map((c) => `${c.chain_id}${c.own === 1 ? " (its own)" : ""}`).join(", ") || "no chain"}`,
      );
    return chain;
  }
  const own = chains.find((c) => c.own === 1) ?? (chains.length === 1 ? chains[0] : undefined);
  if (!own) throw new CliError(`this database holds ${chains.length} chains and none is its own; pass --chain <id>`);
  return own.chain_id;
}

function pinnedKey(opts: { pubkey?: string; key?: string; keyFile?: string }): string | undefined {
  const hex = opts.pubkey ?? opts.key;
  if (hex !== undefined) {
    const parsed = d.HexKey.safeParse(hex);
    if (!parsed.success) throw invalidInput(describeZodIssues("--pubkey", parsed.error.issues));
    return parsed.data;
  }
  if (opts.keyFile) return d.loadKeyFile(opts.keyFile).publicKey;
  return undefined;
}

function readCheckpoints(files: string[]): SignedCheckpoint[] {
  const out: SignedCheckpoint[] = [];
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const [i, line] of text.split("\n").entries()) {
      if (line.trim() === "") continue;
      try {
        out.push(JSON.parse(line) as SignedCheckpoint);
      } catch {
        throw new CliError(`checkpoint file ${file} line ${i + 1} is not a JSON object`);
      }
    }
  }
  return out;
}

/** The ok line's tail when `--against` held: the exported tree the chain was proved to extend. */
function againstText(result: VerifyResult & { against?: { tree_size?: number; root?: string } }): string {
  return result.against ? ` extends tree size ${result.against.tree_size} root ${result.against.root}` : "";
}

function printVerify(result: VerifyResult, json: boolean): void {
  const out = stdoutPalette(json);
  const err = stderrPalette(json);
  const f = result.failure;
  answer(
    json,
    result,
    result.ok
      ? `${out.green("ok")} chain ${result.chain_id} events ${result.events} head ${result.head?.seq}:${result.head?.hash} checkpoints ${result.checkpoints}${againstText(result)}`
      : f?.signed_by
        ? `${out.red("FAIL")} chain ${result.chain_id ?? "?"}: not signed by the key given (${f.detail})`
        : `${out.red("FAIL")} chain ${result.chain_id ?? "?"} seq ${f?.seq} ${f?.code}: ${f?.detail}`,
  );
  if (json) return;
  if (!result.ok)
    process.stderr.write(
      `${err.red("what to do:")} ${f?.signed_by ? wrongKeyAdvice(f.signed_by) : CHAIN_BROKEN_ADVICE}\n`,
    );
  if (result.keySelfAsserted) {
    process.stderr.write(
      `${err.yellow("warning:")} no --pubkey or --key-file given; the chain was checked against the key it names itself (self-asserted)\n`,
    );
  }
}

type TailFlags = {
  db?: string;
  dataDir: string;
  chain?: string;
  tail: string;
  lines?: string;
  database?: string;
  local?: boolean;
  json?: boolean;
  follow?: boolean;
};

function tailOptions(c: Command): Command {
  return c
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option(
      "--database <url>",
      "the controller store on PostgreSQL: postgres://… (default $BERTH_DATABASE_URL; --db wins)",
    )
    .addOption(DB_ALIAS())
    .addOption(LOCAL())
    .option("--chain <id>", "which chain (default: its own)")
    .option("-n, --tail <n>", "how many events", "20")
    .addOption(new Option("--lines <n>", "alias of --tail").hideHelp())
    .option(
      "-f, --follow",
      "then print each event as it is appended, until Ctrl-C (the files read-only, or the server's event pages)",
    )
    .option("--json", "one JSON document: {events: [...]}; with -f one JSON event per line");
}

/** How often -f looks for new events: the store read-only (or the server's event pages); nothing is written. */
const FOLLOW_POLL_MS = 500;

async function tailAction(opts: TailFlags, cmd: Command): Promise<void> {
  await load();
  const n = d.z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .safeParse(opts.lines ?? opts.tail);
  if (!n.success) throw invalidInput(describeZodIssues("-n", n.error.issues));
  const remote = opts.database === undefined ? await auditServer(opts, cmd) : null;
  const row = (e: SealedEvent) => {
    const phase = typeof e.payload.phase === "string" ? ` ${e.payload.phase}` : "";
    return [String(e.seq), new Date(e.ts).toISOString(), `${e.source}/${e.kind}${phase}`, e.hash.slice(0, 12)];
  };
  const show = (chainId: string, events: readonly SealedEvent[]) => {
    if (opts.follow) {
      // A stream: a header once, then one line per event (one JSON event per line with --json), so a pipe reads it live.
      if (!opts.json) process.stdout.write(`${["SEQ", "TIME", "EVENT", "HASH"].join("  ")}\n`);
      for (const e of events) printFollowed(e);
      return;
    }
    const lines = events.map(row);
    answer(
      opts.json,
      { chain_id: chainId, events: events.map((e) => JSON.parse(d.exportLine(e))) },
      lines.length === 0
        ? "no events yet"
        : renderTable(["SEQ", "TIME", "EVENT", "HASH"], lines, { palette: stdoutPalette(opts.json) }),
    );
  };
  const printFollowed = (e: SealedEvent) =>
    process.stdout.write(`${opts.json ? d.exportLine(e) : row(e).join("  ")}\n`);
  const follow = async (next: (after: number) => Promise<SealedEvent[]>, from: number) => {
    let last = from;
    for (;;) {
      await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
      for (const e of await next(last)) {
        printFollowed(e);
        last = e.seq;
      }
    }
  };
  if (remote) {
    const { chainId, events } = await remote.r.tailThrough(remote.t, opts.chain, n.data);
    show(chainId, events);
    if (!opts.follow) return;
    await follow(async (after) => {
      const c = await remote.r.serverChain(remote.t, opts.chain);
      const got: SealedEvent[] = [];
      if (c.head.seq > after)
        for await (const e of remote.r.eventsThrough(remote.t, c, after + 1, c.head.seq)) got.push(e);
      return got;
    }, events.at(-1)?.seq ?? -1);
    return;
  }
  const db = await openForReading(opts);
  try {
    const chainId = pickChain(db, opts.chain);
    const events = d.tailEvents(db, chainId, n.data);
    show(chainId, events);
    if (!opts.follow) return;
    await follow(async (after) => d.eventsAfter(db, chainId, after, 1000), events.at(-1)?.seq ?? -1);
  } finally {
    db.close();
  }
}

export function registerAuditCommands(program: Command): void {
  const audit = program
    .command("audit")
    .description("the signed, hash-chained audit log: verify, tail, export, import, prove");

  audit
    .command("verify")
    .description(
      "verify links, hashes and signatures; exits 1 naming the first bad event (through a server, the server verifies its chain; --file verifies an export offline, here)",
    )
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .addOption(DB_ALIAS())
    .addOption(LOCAL())
    .option("--file <export.jsonl>", "verify an exported chain instead of a database")
    .option("--chain <id>", "which chain in the database (default: its own)")
    .option("--pubkey <hex>", "the owner's public key to pin (64 hex)")
    .option("--key <hex>", "same as --pubkey")
    .option("--key-file <path>", "pin the public key of this key file")
    .option(
      "--checkpoint <file>",
      "a signed checkpoint file (JSON lines) held elsewhere; repeatable",
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .option("--expect-head <seq:hash>", "fail unless the chain has this hash at this seq")
    .option(
      "--against <file>",
      "a Merkle checkpoint exported earlier (berth audit checkpoint --export): fail unless the chain extends it; verified here, never through a server",
    )
    .option(
      "--proof <file>",
      "check a proof document instead of a chain (GET /api/v1/audit/proof/…: an inclusion or consistency proof with its signed notes), offline, under the pinned key",
    )
    .option(
      "--database <url>",
      "the controller's store when it is PostgreSQL (default: $BERTH_DATABASE_URL; --db and --file win)",
    )
    .option("--json", "print one JSON document")
    .action(
      async (
        opts: {
          db?: string;
          dataDir: string;
          file?: string;
          chain?: string;
          pubkey?: string;
          key?: string;
          keyFile?: string;
          checkpoint: string[];
          expectHead?: string;
          against?: string;
          proof?: string;
          database?: string;
          local?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        await load();
        const key = pinnedKey(opts);
        if (opts.proof !== undefined) {
          verifyProofFile(d, opts.proof, key, Boolean(opts.json));
          return;
        }
        let expectHead: { seq: number; hash: string } | undefined;
        if (opts.expectHead !== undefined) {
          const parsed = d.ExpectHead.safeParse(opts.expectHead);
          if (!parsed.success) throw invalidInput(describeZodIssues("--expect-head", parsed.error.issues));
          const [seq, hash] = parsed.data.split(":");
          expectHead = { seq: Number(seq), hash: hash as string };
        }
        const checkpoints = readCheckpoints(opts.checkpoint);
        let result: VerifyResult;
        // An export file's verified events as a tree and its owner key, for --against (issue 38).
        let verified: { tree: ChainTreeView; ownerKey: string } | undefined;
        if (opts.file) {
          if (!existsSync(opts.file)) throw new CliError(`export file ${opts.file} does not exist`);
          const parsed = d.parseEventLines(readFileSync(opts.file, "utf8"));
          if (!parsed.ok) {
            result = {
              ok: false,
              chain_id: null,
              events: 0,
              head: null,
              checkpoints: 0,
              keySelfAsserted: key === undefined,
              failure: { seq: 0, code: "format", detail: `line ${parsed.error.line}: ${parsed.error.reason}` },
            };
          } else {
            result = d.verifyEvents(parsed.value, {
              ...(key ? { key } : {}),
              ...(opts.chain ? { chainId: opts.chain } : {}),
              checkpoints,
              ...(expectHead ? { expectHead } : {}),
            });
            if (opts.against !== undefined && result.ok && result.head) {
              const events = parsed.value.slice(0, result.head.seq + 1) as SealedEvent[];
              verified = {
                tree: d.listTreeView(
                  result.chain_id as string,
                  events.map((e) => e.hash),
                ),
                ownerKey: key ?? String((events[0] as SealedEvent).payload.owner_key),
              };
            }
          }
        } else {
          // An exported file is verified here, offline; a stored chain by whoever holds it (the server verifies and
          // answers), unless --database named the store on the command line.
          // --against: the tree is computed here from the chain read here; a server's word on it would prove nothing.
          const remote =
            opts.database === undefined && opts.against === undefined ? await auditServer(opts, cmd) : null;
          if (remote) {
            result = await remote.r.verifyThrough(remote.t, opts.chain, {
              ...(key ? { key } : {}),
              checkpoints,
              ...(expectHead ? { expectHead } : {}),
            });
          } else {
            const db = await openForReading(opts);
            try {
              const chainId = pickChain(db, opts.chain);
              // Issue 35: a chain in a SQLite file is verified across cores (segments in worker threads, linked after);
              // small chains and the in-memory mirror of a PostgreSQL store are walked here as before.
              const file = db.memory ? null : db.name;
              result =
                file !== null
                  ? await d.verifyStoredChainParallel(file, chainId, {
                      ...(key ? { key } : {}),
                      checkpoints,
                      ...(expectHead ? { expectHead } : {}),
                    })
                  : d.verifyStoredChain(db, chainId, {
                      ...(key ? { key } : {}),
                      checkpoints,
                      ...(expectHead ? { expectHead } : {}),
                    });
              if (opts.against !== undefined && result.ok && result.head) {
                // Only the events the verifier walked (a writer may have appended since), from the stored tree it checked.
                result = againstCheckpoint(
                  d,
                  result,
                  d.storedTreeView(db, chainId, result.head.seq + 1),
                  key ?? d.ownerKeyOf(db, chainId)!,
                  opts.against,
                );
              }
            } finally {
              db.close();
            }
          }
        }
        if (opts.against !== undefined && verified)
          result = againstCheckpoint(d, result, verified.tree, verified.ownerKey, opts.against);
        printVerify(result, Boolean(opts.json));
        process.exitCode = result.ok ? 0 : 1;
      },
    );

  tailOptions(
    audit.command("tail").description("print the newest events (-f: then every event appended, as it is)"),
  ).action(tailAction);
  // Issue 36: `berth events -f` is the chain as it grows, the way people look for it (kubectl get events -w).
  tailOptions(
    program
      .command("events")
      .description("the audit chain's newest events, as `berth audit tail`; -f keeps printing every event appended"),
  ).action(tailAction);

  audit
    .command("export")
    .description(
      "write the chain as JSON lines (one canonical event per line) to stdout; --json wraps them in one document",
    )
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option(
      "--database <url>",
      "the controller store on PostgreSQL: postgres://… (default $BERTH_DATABASE_URL; --db wins)",
    )
    .addOption(DB_ALIAS())
    .addOption(LOCAL())
    .option("--chain <id>", "which chain (default: its own)")
    .option("--from <seq>", "first seq", "0")
    .option("--to <seq>", "last seq")
    .option("--checkpoints", "export the signed checkpoints instead of the events")
    .option("--json", "one JSON document {chain_id, events} (or {chain_id, checkpoints}) instead of JSON lines")
    .action(
      async (
        opts: {
          db?: string;
          dataDir: string;
          chain?: string;
          from: string;
          to?: string;
          checkpoints?: boolean;
          database?: string;
          local?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        await load();
        const Seq = d.z.coerce.number().int().min(0);
        const from = Seq.safeParse(opts.from);
        if (!from.success) throw invalidInput(describeZodIssues("--from", from.error.issues));
        const to =
          opts.to === undefined ? { success: true as const, data: Number.MAX_SAFE_INTEGER } : Seq.safeParse(opts.to);
        if (!to.success) throw invalidInput(describeZodIssues("--to", to.error.issues));
        // JSON lines stream (a chain can be large); --json collects the same lines into one document.
        const collected: unknown[] = [];
        const write = opts.json
          ? (line: string) => collected.push(JSON.parse(line))
          : (line: string) => writeSync(1, `${line}\n`);
        const remote = opts.database === undefined ? await auditServer(opts, cmd) : null;
        if (remote) {
          const c = await remote.r.serverChain(remote.t, opts.chain);
          if (opts.checkpoints)
            for (const cp of await remote.r.checkpointsThrough(remote.t, c))
              write(
                JSON.stringify({
                  checkpoint: {
                    chain_id: cp.checkpoint.chain_id,
                    format: cp.checkpoint.format,
                    head_hash: cp.checkpoint.head_hash,
                    key: cp.checkpoint.key,
                    seq: cp.checkpoint.seq,
                    ts: cp.checkpoint.ts,
                  },
                  sig: cp.sig,
                }),
              );
          else for await (const e of remote.r.eventsThrough(remote.t, c, from.data, to.data)) write(d.exportLine(e));
          if (opts.json)
            answer(true, { chain_id: c.chain_id, [opts.checkpoints ? "checkpoints" : "events"]: collected }, "");
          return;
        }
        const db = await openForReading(opts);
        try {
          const chainId = pickChain(db, opts.chain);
          const owner = d.ownerKeyOf(db, chainId)!;
          if (opts.checkpoints) {
            // Field order as the server's GET /audit/checkpoints, so both print the same bytes.
            for (const cp of d.storedCheckpoints(db, chainId, owner)) write(JSON.stringify(cp));
          } else {
            for (const line of d.exportChainLines(db, chainId, from.data, to.data)) write(line);
          }
          if (opts.json)
            answer(true, { chain_id: chainId, [opts.checkpoints ? "checkpoints" : "events"]: collected }, "");
        } finally {
          db.close();
        }
      },
    );

  audit
    .command("import")
    .description("verify an exported chain and store it as a foreign copy; writes nothing on any defect")
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option(
      "--database <url>",
      "the controller store on PostgreSQL: postgres://… (default $BERTH_DATABASE_URL; --db wins)",
    )
    .addOption(DB_ALIAS())
    .addOption(LOCAL())
    .argument("<file>", "JSON-lines export")
    .option("--pubkey <hex>", "the owner's public key the file must verify under")
    .option("--key-file <path>", "pin the public key of this key file")
    .option("--json", "print one JSON document")
    .action(
      async (
        file: string,
        opts: {
          db?: string;
          dataDir: string;
          pubkey?: string;
          keyFile?: string;
          database?: string;
          local?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        await load();
        if (!existsSync(file)) throw new CliError(`export file ${file} does not exist`);
        const key = pinnedKey(opts);
        const remote = opts.database === undefined ? await auditServer(opts, cmd) : null;
        if (remote) {
          const outcome = await remote.r.importThrough(remote.t, file, readFileSync(file, "utf8"), key);
          answer(
            opts.json,
            { ok: true, chain_id: outcome.chain_id, written: outcome.written },
            `imported chain ${outcome.chain_id}: ${outcome.written} new events`,
          );
          return;
        }
        const text = readFileSync(file, "utf8");
        const onPg = await onPostgres(opts, async (engine) => {
          const { importChainOn } = await import("../chain/import.js");
          return importChainOn(engine, text, key ? { key } : {});
        });
        if (onPg !== undefined) {
          if (!onPg.ok) throw new CliError(`import of ${file} refused, nothing written: ${onPg.error}`, 1);
          const done = onPg.value;
          answer(
            opts.json,
            { ok: true, chain_id: done.chain_id, written: done.written },
            `imported chain ${done.chain_id}: ${done.written} new events`,
          );
          return;
        }
        const db = d.openDatabase(dbPath(opts));
        try {
          const outcome = d.importChain(db, text, key ? { key } : {});
          if (!outcome.ok) throw new CliError(`import of ${file} refused, nothing written: ${outcome.error}`, 1);
          const done = outcome.value;
          answer(
            opts.json,
            { ok: true, chain_id: done.chain_id, written: done.written },
            `imported chain ${done.chain_id}: ${done.written} new events`,
          );
        } finally {
          db.close();
        }
      },
    );

  audit
    .command("checkpoint")
    .description("sign and store a checkpoint of the current head (for anchoring elsewhere)")
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option(
      "--database <url>",
      "the controller store on PostgreSQL: postgres://… (default $BERTH_DATABASE_URL; --db wins)",
    )
    .addOption(DB_ALIAS())
    .addOption(LOCAL())
    .option("--key-file <path>", "the owner's key file", defaultPaths.controllerKey())
    .option(
      "--export",
      "also print the Merkle checkpoint of the head as a signed note (C2SP tlog-checkpoint) to publish elsewhere; on this machine, with the key file",
    )
    .option("--json", "print one JSON document: {checkpoint} (null when nothing is new; with --export also {note})")
    .action(
      async (
        opts: {
          db?: string;
          dataDir: string;
          keyFile: string;
          export?: boolean;
          database?: string;
          local?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        await load();
        const remote = opts.database === undefined ? await auditServer(opts, cmd) : null;
        if (remote && opts.export) {
          const { localOnly } = await import("./remote/server-verb.js");
          throw localOnly(
            "berth audit checkpoint --export",
            "the note is signed with the controller's key file and the tree computed from the chain read here",
            remote.t,
          );
        }
        if (remote) {
          // The server signs with the key its controller chain is owned by; a key file here would be a second signer.
          if (cmd.getOptionValueSource("keyFile") === "cli")
            throw new CliError(
              `--key-file: a checkpoint through a server is signed by the server's own key (${remote.t.via}); drop --key-file, or sign on the controller host with --local`,
              2,
              { kind: "usage" },
            );
          const cp = await remote.r.checkpointThrough(remote.t);
          answer(
            opts.json,
            { checkpoint: cp ?? null },
            cp ? JSON.stringify(cp) : "no events since the last checkpoint",
          );
          return;
        }
        const key = d.loadKeyFile(opts.keyFile);
        // On PostgreSQL: a checkpoint of the controller chain, in one transaction with the tip it signs (EngineChain).
        const pgCheckpoint = await onPostgres(opts, async (engine) => {
          const { EngineChain, ownChainIdOn } = await import("../chain/engine-chain.js");
          // Never a genesis made here: a database without the controller's chain is not a store to checkpoint.
          const own = await engine.read((q) => ownChainIdOn(q)).catch(() => undefined);
          if (own === undefined) throw new CliError(`${engine.location} holds no controller chain of its own`);
          const chain = await EngineChain.open(engine, key, "controller");
          return { cp: (await chain.checkpointIfDue(true)) ?? null };
        });
        // --export (issue 38): after the berth checkpoint is stored, the tree over the verified chain, signed as a note.
        const finish = async (cp: SignedCheckpoint | null) => {
          if (!opts.export) {
            answer(opts.json, { checkpoint: cp }, cp ? JSON.stringify(cp) : "no events since the last checkpoint");
            return;
          }
          const db = await openForReading(opts);
          let note: string;
          try {
            const chainId = pickChain(db, undefined);
            const result = d.verifyStoredChain(db, chainId, { key: key.publicKey });
            if (!result.ok || !result.head)
              throw new CliError(
                `chain ${chainId} does not verify at seq ${result.failure?.seq} (${result.failure?.code}: ${result.failure?.detail}); no checkpoint is exported for a broken chain`,
                1,
              );
            note = d.signCheckpointNote(key, d.treeHeadOf(d.storedTreeView(db, chainId, result.head.seq + 1)));
          } finally {
            db.close();
          }
          answer(opts.json, { checkpoint: cp, note }, note);
        };
        if (pgCheckpoint !== undefined) {
          await finish(pgCheckpoint.cp);
          return;
        }
        const db = openExisting(dbPath(opts), false);
        try {
          const role = d.ownChain(db)?.role;
          if (!role) throw new CliError(`${dbPath(opts)} has no chain of its own`);
          const chain = d.Chain.open(db, key, role);
          const cp = chain.checkpointIfDue(true);
          db.close();
          await finish(cp ?? null);
        } finally {
          if (db.open) db.close();
        }
      },
    );

  audit
    .command("reseal")
    .description(
      "start a new chain naming the last verified event of a broken one (never done silently); on the controller host only, never through a server",
    )
    .option("--data-dir <dir>", "berth home whose controller.db holds the chain", berthHome())
    .option(
      "--database <url>",
      "the controller store on PostgreSQL: postgres://… (default $BERTH_DATABASE_URL; --db wins)",
    )
    .addOption(DB_ALIAS())
    .addOption(LOCAL())
    .requiredOption("--new-chain", "confirm that a new chain is wanted")
    .requiredOption("--reason <text>", "why the old chain is abandoned")
    .option("--key-file <path>", "the owner's key file", defaultPaths.controllerKey())
    .option("--json", "print one JSON document")
    .action(
      async (
        opts: {
          db?: string;
          dataDir: string;
          keyFile: string;
          reason: string;
          database?: string;
          local?: boolean;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        await load();
        const remote = opts.database === undefined ? await auditServer(opts, cmd) : null;
        if (remote) {
          const { localOnly } = await import("./remote/server-verb.js");
          throw localOnly(
            "berth audit reseal",
            "it abandons the controller's chain, which is done on the controller host with its key file and the server stopped, never by whoever holds an API token",
            remote.t,
          );
        }
        const key = d.loadKeyFile(opts.keyFile);
        if (opts.db === undefined && (await postgresAddress(opts.database)) !== undefined) {
          // docs/ha.md "What the store guarantees": every server on the store holds the chain id open and appends to it.
          throw new CliError(
            "berth audit reseal is refused on a PostgreSQL store: it abandons the chain every berth serve on the store appends to, and those may run on other machines this verb cannot see or stop, so a reseal could leave a server appending to the abandoned chain. A broken chain on PostgreSQL is not resealed in place: stop every server, `berth audit export` the chain, and open a new store (docs/ha.md)",
            1,
          );
        }
        const db = openExisting(dbPath(opts), false);
        try {
          const role = d.ownChain(db)?.role ?? "controller";
          const chain = d.Chain.reseal(db, key, role, opts.reason);
          answer(
            opts.json,
            { chain_id: chain.chainId },
            `new chain ${chain.chainId}; the old one is kept as a foreign chain`,
          );
        } finally {
          db.close();
        }
      },
    );

  registerMerkleCommands(audit, { load, openForReading, pickChain, pinnedKey });
  registerAuditWitnesses(audit);
}
