/**
 * The mesh controller's verbs: `berth place`, `berth nodes add|list|tier`, `berth instances`,
 * `berth instance status|start|stop|unload|logs ID`, `berth unsettled [--settle]`. Each opens the controller state
 * in `$BERTH_HOME/controller.db` with the key `$BERTH_HOME/keys/controller.key`, calls the library, prints, and
 * closes. No decision lives here: the CLI only wires flags to `MeshController` and renders its answers.
 */
import { Argument, type Command } from "commander";
import { z } from "zod";
import { PlaceError, type PlaceReport, type TargetInfo, VERBS, type Verb, type VerbResult } from "../mesh/controller/index.js";
import { CliError, describeZodIssues, invalidInput, unknownInstance, unreachableNode } from "./errors.js";
import { answer } from "./output.js";
import { operatorIdentity, withController } from "./controller.js";
import { berthHome, defaultPaths } from "./paths.js";
import { withSpinner } from "./progress.js";
import { type Palette, paintState, stdoutPalette } from "./style.js";
import { renderTable } from "./table.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];
const TierSchema = z.enum(["discovered", "paired", "pinned"]);
const NodeIdSchema = z.string().regex(/^[0-9a-f]{32}$/, "must be a node id (32 lowercase hex characters)");

// A describe that got no answer at all (as opposed to an answer berth refused, e.g. signed by another key).
const NO_ANSWER = /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|timed out|did not answer|closed/i;

interface CommonOptions {
  readonly dataDir?: string;
  readonly keyFile?: string;
  readonly json?: boolean;
}

function withCommon(cmd: Command): Command {
  return cmd
    .option("--data-dir <dir>", "controller data directory (controller.db, peers.json, signers.json, permits.json, packages/)", berthHome())
    .option("--key-file <path>", "the controller's identity key", defaultPaths.controllerKey())
    .option("--json", "print one JSON document");
}

function nodeIds(flag: string, values: string[] | undefined): string[] {
  return (values ?? []).map((v) => {
    const parsed = NodeIdSchema.safeParse(v);
    if (!parsed.success) throw invalidInput(describeZodIssues(flag, parsed.error.issues));
    return parsed.data;
  });
}

/** Colours the columns that hold a state word; the rest stay plain. */
const paintColumns = (palette: Palette, columns: readonly number[]) => (column: number, text: string) => (columns.includes(column) ? paintState(palette, text) : text);

function targetTable(targets: readonly TargetInfo[], json: boolean | undefined): string {
  if (targets.length === 0) return "no targets; add one with `berth nodes add HOST:PORT --tier paired`";
  const note = (t: TargetInfo) => (t.unreachable_since_ms === null ? (t.error ?? "") : `unreachable since ${new Date(t.unreachable_since_ms).toISOString()}${t.error ? `: ${t.error}` : ""}`);
  const rows = targets.map((t) => [t.node_id ?? "-", t.name ?? "-", t.addr, t.tier, t.liveness, note(t)]);
  const palette = stdoutPalette(json);
  return renderTable(["NODE", "NAME", "ADDRESS", "TIER", "LIVENESS", "NOTE"], rows, { palette, paint: paintColumns(palette, [3, 4]) });
}

function verbText(r: VerbResult): string {
  switch (r.kind) {
    case "ok":
      if (r.verb === "logs") return `${String(r.result.stdout ?? "")}${r.result.stderr ? `--- stderr ---\n${String(r.result.stderr)}` : ""}`;
      if (r.verb === "status") return JSON.stringify(r.result.status, null, 2);
      return `${r.verb} ${r.instance_id} on ${r.node}: ok ${JSON.stringify(r.result)}`;
    case "refused":
      return `${r.verb} ${r.instance_id}: refused by node ${r.node} (${r.code}: ${r.reason})`;
    case "unreachable":
      return `${r.verb} ${r.instance_id}: node ${r.node} is unreachable (${r.reason}); nothing changed on the controller`;
    case "indeterminate":
      return `${r.verb} ${r.instance_id}: no valid answer from node ${r.node} (${r.reason}); the record is marked pending ${r.verb}, and the next status resolves it`;
    case "error":
      return `${r.verb} ${r.instance_id}: ${r.reason}`;
    default: {
      const never: never = r;
      return String(never);
    }
  }
}

function placeSummary(r: PlaceReport): string {
  if (r.placed) return `placed ${r.placed.name} as ${r.placed.instance_id} on ${r.placed.node_id}`;
  if (r.unsettled) return "NOT PLACED: the last target may hold the instance; the decision is unsettled (see `berth unsettled --settle`)";
  if (r.decision.placement === null) return "NOT PLACED: no eligible node";
  if (r.attempts.length === 0) return "dry run: nothing was sent";
  return "NOT PLACED: every candidate refused or was unreachable";
}

export function registerMeshCommands(program: Command): void {
  withCommon(
    program
      .command("place <package>")
      .description("decide where a signed package runs, record the decision, and place it there (prints the explain)")
      .option("--name <name>", "the workload's name (default: the package name)")
      .option("--pin <node>", "place only on this node id (never overrides a constraint)")
      .option("--prefer <node>", "prefer this node id (repeatable)", collect)
      .option("--avoid <node>", "avoid this node id unless it is the only choice (repeatable)", collect)
      .option("--allow-emulated", "allow an emulated route when no native one fits anywhere")
      .option("--dry-run", "decide and record the decision, but send nothing")
      .option("--no-start", "load only (method load), do not start")
      .option("--mode <mode>", "service or once", "service")
      .option("--arg <arg>", "an argument appended to the entry's (repeatable)", collect),
  ).action(
    async (
      pkg: string,
      opts: CommonOptions & { name?: string; pin?: string; prefer?: string[]; avoid?: string[]; allowEmulated?: boolean; dryRun?: boolean; start: boolean; mode: string; arg?: string[] },
    ) => {
      const mode = z.enum(["service", "once"]).safeParse(opts.mode);
      if (!mode.success) throw invalidInput(describeZodIssues("--mode", mode.error.issues));
      const order = {
        package: pkg,
        name: opts.name ?? null,
        config: { mode: mode.data, args: opts.arg ?? [] },
        pin: opts.pin ? (nodeIds("--pin", [opts.pin])[0] ?? null) : null,
        prefer: nodeIds("--prefer", opts.prefer),
        avoid: nodeIds("--avoid", opts.avoid),
        allow_emulated: opts.allowEmulated ?? false,
        start: opts.start,
        dry_run: opts.dryRun ?? false,
      };
      const report = await withController(opts, async (c) => {
        try {
          return await withSpinner(order.dry_run ? "deciding where it would run" : "deciding and asking the node to run it", opts.json, () => c.place(order));
        } catch (error) {
          if (error instanceof PlaceError) {
            const text = [`place refused (${error.code}): ${error.message}`, ...error.constraints.map((r) => `  ${r.constraint}: ${r.detail}`)].join("\n");
            throw new CliError(text.trimEnd(), 1, { details: { code: error.code, constraints: error.constraints } });
          }
          throw error;
        }
      });
      answer(opts.json, report, `${report.explain}${placeSummary(report)}`);
      if (!report.placed && !order.dry_run) process.exitCode = 1;
    },
  );

  const nodes = program.command("nodes").description("the controller's targets: nodes it knows, their keys, tiers and liveness");
  withCommon(
    nodes
      .command("add <addr>")
      .description("add a node by HOST:PORT; its key is learned on this first describe (trust on first use) unless --key is given")
      .option("--tier <tier>", "discovered, paired or pinned (default discovered: runs nothing)")
      .option("--key <hex>", "the node's public key; the describe must be answered by it"),
  ).action(async (addr: string, opts: CommonOptions & { tier?: string; key?: string }) => {
    const tier = opts.tier === undefined ? null : TierSchema.safeParse(opts.tier);
    if (tier && !tier.success) throw invalidInput(describeZodIssues("--tier", tier.error.issues));
    if (opts.key !== undefined && !/^[0-9a-f]{64}$/.test(opts.key)) throw new CliError("--key: must be 64 lowercase hex characters (an Ed25519 public key)");
    const r = await withController(opts, (c) => withSpinner(`asking ${addr} to describe itself`, opts.json, () => c.addTarget(addr, tier ? tier.data : null, opts.key ?? null)));
    if (!r.ok) throw NO_ANSWER.test(r.error) ? unreachableNode(`nodes add ${addr}`, r.error) : new CliError(r.error, 1);
    answer(opts.json, r.target, `node ${r.target.node_id} at ${r.target.addr}\nkey   ${r.target.key}\ntier  ${r.target.tier}`);
  });
  withCommon(nodes.command("list").description("list known nodes").option("--refresh", "describe every node now (liveness, facts)")).action(
    async (opts: CommonOptions & { refresh?: boolean }) => {
      const list = await withController(opts, (c) => (opts.refresh ? withSpinner("describing every node", opts.json, () => c.refreshTargets()) : c.targets()));
      answer(opts.json, { targets: list }, targetTable(list, opts.json));
    },
  );
  withCommon(nodes.command("tier <node> <tier>").description("set a node's tier (by node id or address); chained as peer.tier")).action(
    async (ref: string, tierText: string, opts: CommonOptions) => {
      const tier = TierSchema.safeParse(tierText);
      if (!tier.success) throw invalidInput(describeZodIssues("tier", tier.error.issues));
      const ok = await withController(opts, async (c) => c.setTier(ref, tier.data));
      if (!ok) throw new CliError(`no known node ${ref}; add it first with \`berth nodes add HOST:PORT\``, 1);
      answer(opts.json, { node: ref, tier: tier.data }, `${ref}: tier ${tier.data}`);
    },
  );

  withCommon(program.command("instances").description("list the placements this controller manages")).action(async (opts: CommonOptions) => {
    const list = await withController(opts, async (c) => c.placements());
    const rows = list.map((p) => [p.instance_id, p.node_id, p.variant, [p.adopted ? "adopted" : "", p.pending ? `pending ${p.pending}` : ""].filter(Boolean).join(", ")]);
    const text = list.length === 0 ? "no placed instances; place one with `berth place PACKAGE`" : renderTable(["INSTANCE", "NODE", "VARIANT", "NOTE"], rows, { palette: stdoutPalette(opts.json) });
    answer(opts.json, { placements: list }, text);
  });

  withCommon(
    program
      .command("instance")
      .addArgument(new Argument("<verb>", "what to do").choices(VERBS))
      .argument("<id>", "the instance id (`berth instances` lists them)")
      .description(`act on a placed instance through its node: ${VERBS.join(", ")}`)
      .option("--grace-ms <ms>", "stop: SIGTERM grace before SIGKILL", "2000")
      .option("--tail-bytes <n>", "logs: bytes from the end of each stream", "65536"),
  ).action(async (verb: string, id: string, opts: CommonOptions & { graceMs: string; tailBytes: string }) => {
    const grace = Number(opts.graceMs);
    const tail = Number(opts.tailBytes);
    if (!Number.isInteger(grace) || grace < 0 || grace > 60_000) throw new CliError("--grace-ms: must be an integer 0…60000");
    if (!Number.isInteger(tail) || tail < 0 || tail > 65_536) throw new CliError("--tail-bytes: must be an integer 0…65536");
    const r = await withController(opts, (c) => c.instance(verb as Verb, id, { grace_ms: grace, tail_bytes: tail, operator: operatorIdentity(`berth instance ${verb}`) }));
    if (r.kind === "error" && r.code === "unknown_instance") throw unknownInstance(id, `${verb} ${id}: ${r.reason}`);
    if (r.kind === "unreachable") throw unreachableNode(`${verb} ${id} on ${r.node}`, `${r.reason}; nothing changed on the controller`);
    // A refused or indeterminate answer keeps its own fields; `error` is the same sentence people read.
    answer(opts.json, { ok: r.kind === "ok", ...r, ...(r.kind === "ok" ? {} : { error: verbText(r) }) }, verbText(r));
    if (r.kind !== "ok") process.exitCode = 1;
  });

  withCommon(
    program.command("unsettled").description("decisions whose lost answer could not be reconciled yet").option("--settle", "ask their nodes now and adopt or release"),
  ).action(async (opts: CommonOptions & { settle?: boolean }) => {
    const doc = await withController(opts, async (c) => {
      const report = opts.settle ? await withSpinner("asking the nodes of unsettled decisions", opts.json, () => c.settleReport()) : null;
      return { settled: report, unsettled: await c.unsettled() };
    });
    const rows = doc.unsettled.map((d) => [d.decision_id, d.name, d.node_id]);
    const head = doc.settled ? `settled: ${doc.settled.adopted} adopted, ${doc.settled.settledEmpty} released\n` : "";
    const body = rows.length ? renderTable(["DECISION", "NAME", "NODE"], rows, { palette: stdoutPalette(opts.json) }) : "no unsettled decisions";
    answer(opts.json, doc, `${head}${body}`);
  });
}

