/**
 * The mesh controller's verbs: `berth place`, `berth nodes add|list|tier|remove`, `berth instances`,
 * `berth instance status|start|stop|unload|logs ID`, `berth unsettled [--settle]`, `berth top`. Each asks the controller the
 * invocation talks to (backends/: the home's files, a context's server, or the `berth serve` running on the home),
 * and renders its answer the same way whichever it was. Registration loads only commander (issue 19).
 *
 * (About 570 lines, one concept: the mesh's verb group; each verb is its options and its rendering, a few dozen
 * lines that share the backends and renderers above.)
 */
import { Argument, type Command, Option } from "commander";
import type { TopInput, TopRow, UsageReading } from "../core/agents/top.js";
import { TIERS, type Tier } from "../core/identity/tier.js";
import type { RestartPolicy } from "../core/node/restart-policy.js";
import type { PlaceReport, Verb, VerbResult } from "../mesh/controller/index.js";
import type { MovedRecord } from "../mesh/controller/move-records.js";
import { type InstanceRow, openBackend, type TargetRow } from "./backends/index.js";
import { describeText } from "./describe.js";
import { CliError, invalidInput, unknownInstance, unreachableNode } from "./errors.js";
import { backendFlags, type ControllerVerbFlags, controllerFlags, integerFlag, oneOf, watchFlags } from "./flags.js";
import { answer, wideOutput } from "./output.js";
import { type Palette, paintSeen, stdoutPalette } from "./style.js";
import { agoText, seenText } from "../core/mesh/instance-observation.js";
import { renderTable } from "./table.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];
/** The controller's verbs (mesh/controller/verbs.ts VERBS); the type check below keeps the two lists equal. */
export const INSTANCE_VERBS = ["status", "start", "stop", "unload", "logs"] as const satisfies readonly Verb[];
type _SameVerbs = Verb extends (typeof INSTANCE_VERBS)[number] ? true : never;
const _sameVerbs: _SameVerbs = true;
void _sameVerbs;

const NODE_ID = /^[0-9a-f]{32}$/;
/** core/node/restart-policy.ts RestartPolicySchema's words (that module loads zod: not at registration). */
const RESTART_POLICIES = ["never", "on-failure", "always"] as const satisfies readonly RestartPolicy[];

// A describe that got no answer at all (as opposed to an answer berth refused, e.g. signed by another key).
const NO_ANSWER = /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|timed out|did not answer|closed/i;

function nodeIds(flag: string, values: string[] | undefined): string[] {
  return (values ?? []).map((v) => {
    if (!NODE_ID.test(v)) throw invalidInput(`${flag}: value: must be a node id (32 lowercase hex characters)`);
    return v;
  });
}

const tierOf = (flag: string, value: string): Tier => oneOf(flag, value, TIERS);

/** Colours the columns that hold a state word; the rest stay plain. */
const paintColumns = (palette: Palette, columns: readonly number[]) => (column: number, text: string) =>
  columns.includes(column) ? paintSeen(palette, text) : text;

/** How long ago, in the largest unit that fits: 45s, 12m, 3h, 2d. */
export function age(sinceMs: number, nowMs: number): string {
  return agoText(nowMs - sinceMs);
}

function targetTable(targets: readonly TargetRow[], json: boolean | undefined): string {
  if (targets.length === 0) return "no targets; add one with `berth nodes add HOST:PORT --tier paired`";
  const contact = (t: TargetRow) =>
    t.unreachable_since_ms === null
      ? (t.error ?? "")
      : `unreachable since ${new Date(t.unreachable_since_ms).toISOString()}${t.error ? `: ${t.error}` : ""}`;
  const note = (t: TargetRow) => [nodeMarks(t), contact(t)].filter(Boolean).join("; ");
  const wide = wideOutput();
  const now = Date.now();
  const rows = targets.map((t) => [
    t.node_id ?? "-",
    t.name ?? "-",
    t.addr,
    t.tier,
    t.liveness,
    ...(wide
      ? [
          String(t.facts?.board ?? "-"),
          String(t.facts?.arch ?? "-"),
          t.boot_id ?? "-",
          t.last_ok_ms === null ? "-" : age(t.last_ok_ms, now),
        ]
      : []),
    note(t),
  ]);
  const palette = stdoutPalette(json);
  return renderTable(
    ["NODE", "NAME", "ADDRESS", "TIER", "LIVENESS", ...(wide ? ["BOARD", "ARCH", "BOOT", "LAST OK"] : []), "NOTE"],
    rows,
    { palette, paint: paintColumns(palette, [3, 4]) },
  );
}

/** Issue 16: the operator's marks on a node, first in its NOTE (a forgotten node is cordoned too: forget says it all). */
export function nodeMarks(t: Pick<TargetRow, "cordoned" | "cordon_reason" | "forgotten_ms" | "forget_reason">): string {
  if (t.forgotten_ms !== null && t.forgotten_ms !== undefined)
    return `forgotten ${new Date(t.forgotten_ms).toISOString()}${t.forget_reason ? ` (${t.forget_reason})` : ""}`;
  if (t.cordoned) return `cordoned${t.cordon_reason ? ` (${t.cordon_reason})` : ""}`;
  return "";
}

const MOVED_BY: Readonly<Record<MovedRecord["authority"], string>> = {
  lease: "lease ran out",
  lost: "lost",
  drain: "drained",
  forget: "node forgotten",
};

/**
 * Issue 16: placements taken off their node, under the placements: the old copy berth still settles (stopped or
 * unloaded when its node answers) and what replaced it.
 */
export function movedTable(list: readonly MovedRecord[], json: boolean | undefined, nowMs = Date.now()): string {
  const rows = list.map((m) => [
    m.instance_id,
    m.name,
    m.node_id,
    MOVED_BY[m.authority] ?? m.authority,
    age(m.moved_ms, nowMs),
    String(m.moves),
    m.successor === null ? "not placed again yet" : `decision ${m.successor.slice(0, 12)}`,
  ]);
  const table = renderTable(["OLD INSTANCE", "NAME", "OLD NODE", "MOVED BY", "AGE", "MOVES", "REPLACED BY"], rows, {
    palette: stdoutPalette(json),
  });
  return `moved off their node (each old copy is stopped or unloaded when its node answers):\n${table}`;
}

function instanceTable(list: readonly InstanceRow[], json: boolean | undefined): string {
  if (list.length === 0) return "no placed instances; place one with `berth place PACKAGE`";
  const wide = wideOutput();
  const now = Date.now();
  const rows = list.map((p) => [
    p.instance_id,
    p.name,
    p.node_id,
    // Issue 35: a stored row says when its node last reported its state (`running (seen 4s ago)`, `unknown (never seen)`).
    p.seen_ms === undefined ? p.state : seenText(p.state, p.seen_ms, now),
    // Issue 15: the node supervisor's restarts since the operator last started it.
    typeof p.status?.restarts === "number" ? String(p.status.restarts) : "-",
    age(p.placed_ms, now),
    p.variant,
    ...(wide
      ? [p.route, p.decision_id.slice(0, 12), p.package_id.slice(0, 12), new Date(p.placed_ms).toISOString()]
      : []),
    [
      p.adopted ? "adopted" : "",
      p.pending ? `pending ${p.pending}` : "",
      typeof p.status?.restart_policy === "string" && p.status.restart_policy !== "never"
        ? `restart ${p.status.restart_policy}`
        : "",
    ]
      .filter(Boolean)
      .join(", "),
  ]);
  const palette = stdoutPalette(json);
  return renderTable(
    [
      "INSTANCE",
      "NAME",
      "NODE",
      "STATE",
      "RESTARTS",
      "AGE",
      "VARIANT",
      ...(wide ? ["ROUTE", "DECISION", "PACKAGE", "PLACED"] : []),
      "NOTE",
    ],
    rows,
    { palette, paint: paintColumns(palette, [3]) },
  );
}

/** A placement as `berth top` reads it: the agent's name where berth deployed it, the usage its node reported. */
function topInput(p: InstanceRow): TopInput {
  const status = p.status ?? {};
  const u = status.usage as Partial<UsageReading> | undefined;
  const usage =
    u && typeof u.cpu_usec === "number" && typeof u.memory_bytes === "number" && typeof u.sampled_ms === "number"
      ? { cpu_usec: u.cpu_usec, memory_bytes: u.memory_bytes, sampled_ms: u.sampled_ms }
      : null;
  return {
    instance_id: p.instance_id,
    agent: typeof status.agent === "string" && status.agent !== "" ? status.agent : p.name,
    target: "mesh",
    node: p.node_id,
    usage,
  };
}

async function topTable(rows: readonly TopRow[], json: boolean | undefined): Promise<string> {
  if (rows.length === 0) return "no running agents; deploy one with `berth deploy FILE`";
  const { humanBytes } = await import("../core/agents/top.js");
  const wide = wideOutput();
  const body = rows.map((r) => [
    r.agent,
    r.target,
    r.node.slice(0, 12),
    r.cpu_percent === null ? "-" : `${r.cpu_percent.toFixed(1)}%`,
    r.memory_bytes === null ? "-" : humanBytes(r.memory_bytes),
    ...(wide ? [r.instance_id, r.cpu_seconds_total === null ? "-" : r.cpu_seconds_total.toFixed(2)] : []),
  ]);
  return renderTable(["AGENT", "TARGET", "NODE", "CPU", "MEM", ...(wide ? ["INSTANCE", "CPU SECONDS"] : [])], body, {
    palette: stdoutPalette(json),
  });
}

/** What `instance status` describes: the node it is on, then the node's row for it (and whether berth placed it). */
function statusFields(result: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const status =
    result.status !== null && typeof result.status === "object"
      ? (result.status as Record<string, unknown>)
      : { state: "-" };
  return {
    instance_id: result.instance_id,
    node: result.node,
    ...status,
    ...(result.unmanaged === true ? { unmanaged: true } : {}),
  };
}

export function verbText(r: VerbResult): string {
  switch (r.kind) {
    case "ok":
      if (r.verb === "logs")
        return `${String(r.result.stdout ?? "")}${r.result.stderr ? `--- stderr ---\n${String(r.result.stderr)}` : ""}`;
      // Issue 36 item 9: describe lines made from the document -o json prints (describe.ts), never a JSON block.
      if (r.verb === "status") return describeText(statusFields(r.result));
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
  if (r.unsettled)
    return "NOT PLACED: the last target may hold the instance; the decision is unsettled (see `berth unsettled --settle`)";
  if (r.decision.placement === null) return "NOT PLACED: no eligible node";
  if (r.attempts.length === 0) return "dry run: nothing was sent";
  return "NOT PLACED: every candidate refused or was unreachable";
}

type WatchFlags = { watch?: boolean; interval: string };

/** A list verb's answer once, or again whenever it changes with --watch. */
async function listOrWatch(
  opts: ControllerVerbFlags & WatchFlags,
  ask: () => Promise<{ doc: unknown; text: string }>,
): Promise<void> {
  if (!opts.watch) {
    const { doc, text } = await ask();
    answer(opts.json, doc, text);
    return;
  }
  const seconds = Number(opts.interval);
  if (!Number.isFinite(seconds) || seconds < 0.2 || seconds > 3600)
    throw new CliError(`--interval: ${JSON.stringify(opts.interval)} must be a number of seconds 0.2…3600`);
  await (await import("./watch.js")).watchList(seconds * 1000, opts.json, ask);
}

export function registerMeshCommands(program: Command): void {
  controllerFlags(
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
      .option(
        "--restart <policy>",
        "never, on-failure or always: what the node does when it ends (spec/mesh.md §15)",
        "never",
      )
      .option("--arg <arg>", "an argument appended to the entry's (repeatable)", collect),
  ).action(
    async (
      pkg: string,
      opts: ControllerVerbFlags & {
        name?: string;
        pin?: string;
        prefer?: string[];
        avoid?: string[];
        allowEmulated?: boolean;
        dryRun?: boolean;
        start: boolean;
        mode: string;
        restart: string;
        arg?: string[];
      },
      cmd: Command,
    ) => {
      oneOf("--mode", opts.mode, ["service", "once"] as const);
      oneOf("--restart", opts.restart, RESTART_POLICIES);
      const order = {
        package: pkg,
        name: opts.name ?? null,
        config: { mode: opts.mode as "service" | "once", args: opts.arg ?? [] },
        pin: opts.pin ? (nodeIds("--pin", [opts.pin])[0] ?? null) : null,
        prefer: nodeIds("--prefer", opts.prefer),
        avoid: nodeIds("--avoid", opts.avoid),
        allow_emulated: opts.allowEmulated ?? false,
        start: opts.start,
        restart: opts.restart as (typeof RESTART_POLICIES)[number],
        dry_run: opts.dryRun ?? false,
      };
      const report = await (await openBackend(backendFlags(opts, cmd))).place(order);
      answer(opts.json, report, `${report.explain}${placeSummary(report)}`);
      if (!report.placed && !order.dry_run) process.exitCode = 1;
    },
  );

  const nodes = program
    .command("nodes")
    .description("the controller's targets: nodes it knows, their keys, tiers and liveness");
  controllerFlags(
    nodes
      .command("add <addr>")
      .description(
        "add a node by HOST:PORT; its key is learned on this first describe (trust on first use) unless --key is given",
      )
      .option("--tier <tier>", "discovered, paired or pinned (default discovered: runs nothing)")
      .option("--key <hex>", "the node's public key; the describe must be answered by it"),
  ).action(async (addr: string, opts: ControllerVerbFlags & { tier?: string; key?: string }, cmd: Command) => {
    const tier = opts.tier === undefined ? null : tierOf("--tier", opts.tier);
    if (opts.key !== undefined && !/^[0-9a-f]{64}$/.test(opts.key))
      throw new CliError("--key: must be 64 lowercase hex characters (an Ed25519 public key)");
    // The API's rule for an address (contract.ts), checked here so both ways refuse it in the same words (issue 36).
    if (!/^[^\s:]+:\d{1,5}$/.test(addr))
      throw invalidInput(
        `addr: ${JSON.stringify(addr)} must be HOST:PORT (the address \`berth node serve\` listens on)`,
      );
    const backend = await openBackend(backendFlags(opts, cmd));
    const { withSpinner } = await import("./progress.js");
    const r = await withSpinner(`asking ${addr} to describe itself`, opts.json, () =>
      backend.addTarget(addr, tier, opts.key ?? null),
    );
    if (!r.ok) throw NO_ANSWER.test(r.error) ? unreachableNode(`nodes add ${addr}`, r.error) : new CliError(r.error, 1);
    const node = r.value;
    answer(opts.json, node, `node ${node.node_id} at ${node.addr}\nkey   ${node.key}\ntier  ${node.tier}`);
  });
  controllerFlags(
    watchFlags(
      nodes
        .command("list")
        .description("list known nodes (-o wide: board, arch, boot, last answer)")
        .option("--refresh", "describe every node now (liveness, facts)")
        .option(
          "-l, --selector <selector>",
          "only the nodes whose labels (node.json `labels`; describes every node first) match: key=value, key!=value, key, !key (commas: all must hold)",
        ),
    ),
  ).action(async (opts: ControllerVerbFlags & WatchFlags & { refresh?: boolean; selector?: string }, cmd: Command) => {
    await refuseBadSelector(opts.selector);
    const backend = await openBackend(backendFlags(opts, cmd));
    await listOrWatch(opts, async () => {
      const list = await backend.targets(opts.refresh === true, opts.selector);
      // Issue 35: no table is drawn for a JSON answer (at 10,000 rows it was a tenth of the verb).
      return { doc: { targets: list }, text: opts.json ? "" : targetTable(list, opts.json) };
    });
  });
  controllerFlags(
    nodes
      .command("remove <node>")
      .description(
        "take a forgotten node (`berth node forget`) off the list: its address, key and tier are dropped; refused, naming its state, for a node not forgotten; chained as peer.remove",
      )
      .option("--reason <text>", "why (chained with who asked)", "no longer part of the mesh"),
  ).action(async (ref: string, opts: ControllerVerbFlags & { reason: string }, cmd: Command) => {
    if (opts.reason.trim() === "" || Buffer.byteLength(opts.reason, "utf8") > 1024)
      throw invalidInput("--reason: must say why, in at most 1024 bytes");
    const doc = await (await openBackend(backendFlags(opts, cmd))).nodeAdmin("remove", ref, opts.reason.trim());
    answer(
      opts.json,
      doc,
      `node ${String(doc.node)} removed: ${String(doc.addr)} is no longer listed (\`berth nodes add ${String(doc.addr)}\` would meet it as a new node)`,
    );
  });
  controllerFlags(
    nodes.command("tier <node> <tier>").description("set a node's tier (by node id or address); chained as peer.tier"),
  ).action(async (ref: string, tierText: string, opts: ControllerVerbFlags, cmd: Command) => {
    const tier = tierOf("tier", tierText);
    const ok = await (await openBackend(backendFlags(opts, cmd))).setTier(ref, tier);
    if (!ok) throw new CliError(`no known node ${ref}; add it first with \`berth nodes add HOST:PORT\``, 1);
    answer(opts.json, { node: ref, tier }, `${ref}: tier ${tier}`);
  });

  controllerFlags(
    watchFlags(
      program
        .command("instances")
        .description(
          "list the placements this controller manages, with each one's state on its node and its age (-o wide: more); on this home's files, as stored unless --refresh",
        )
        .option("--refresh", "ask every node for its instances' state now (a running berth serve always answers live)")
        .option(
          "-l, --selector <selector>",
          "only the instances of agents whose metadata.labels match: key=value, key!=value, key, !key (commas: all must hold); one placed by hand has no labels",
        ),
    ),
  ).action(async (opts: ControllerVerbFlags & WatchFlags & { refresh?: boolean; selector?: string }, cmd: Command) => {
    await refuseBadSelector(opts.selector);
    const backend = await openBackend(backendFlags(opts, cmd));
    await listOrWatch(opts, async () => {
      const { placements: list, moved } = await backend.instances(opts.refresh === true, opts.selector);
      if (opts.json) return { doc: { placements: list, moved }, text: "" };
      const table = instanceTable(list, opts.json);
      const text = moved.length === 0 ? table : `${table}\n\n${movedTable(moved, opts.json)}`;
      // Issue 35: said once, after everything, not per row; only of a stored list with a row never seen or seen long ago.
      const { STORED_STATE_HINT, storedStateNeedsHint } = await import("../mesh/controller/views.js");
      return {
        doc: { placements: list, moved },
        text: storedStateNeedsHint(list, Date.now()) ? `${text}\n${STORED_STATE_HINT}` : text,
      };
    });
  });

  controllerFlags(
    program
      .command("top")
      .description(
        "CPU and memory of every running agent, from its cgroup on its node (--watch: again every --interval seconds until Ctrl-C)",
      )
      .option("-w, --watch", "redraw until Ctrl-C")
      .option("--interval <seconds>", "--watch: how often to read (and the first CPU interval)", "2"),
  ).action(async (opts: ControllerVerbFlags & WatchFlags, cmd: Command) => {
    const seconds = Number(opts.interval);
    if (!Number.isFinite(seconds) || seconds < 0.2 || seconds > 3600)
      throw new CliError(`--interval: ${JSON.stringify(opts.interval)} must be a number of seconds 0.2…3600`);
    const backend = await openBackend(backendFlags(opts, cmd));
    const { topRows } = await import("../core/agents/top.js");
    let before = new Map<string, UsageReading>();
    const read = async () => {
      // Usage lives in what the nodes answer now: top always asks (issue 35: the stored list has no state to read).
      const { placements } = await backend.instances(true);
      const inputs = placements.filter((p) => p.state === "running" || p.state === "unhealthy").map(topInput);
      const rows = topRows(inputs, before);
      before = new Map(inputs.flatMap((i) => (i.usage ? [[i.instance_id, i.usage] as const] : [])));
      return rows;
    };
    // A CPU share needs two readings: the first answer waits one interval (a plain `top` prints once, with figures).
    await read();
    const ask = async () => {
      const rows = await read();
      return { doc: { agents: rows }, text: await topTable(rows, opts.json) };
    };
    if (!opts.watch) {
      await new Promise((r) => setTimeout(r, Math.min(seconds, 2) * 1000));
      const { doc, text } = await ask();
      answer(opts.json, doc, text);
      return;
    }
    await (await import("./watch.js")).watchList(seconds * 1000, opts.json, ask);
  });

  controllerFlags(
    program
      .command("instance")
      .addArgument(new Argument("<verb>", "what to do").choices(INSTANCE_VERBS))
      .argument("<id>", "the instance id (`berth instances` lists them)")
      .description(`act on a placed instance through its node: ${INSTANCE_VERBS.join(", ")}`)
      .option("--grace-ms <ms>", "stop: SIGTERM grace before SIGKILL", "2000")
      .option("-n, --tail <lines>", "logs: the last N lines of each stream (of at most its last 64 KiB)")
      .option("-f, --follow", "logs: keep printing what the instance writes, until Ctrl-C")
      .addOption(new Option("--tail-bytes <n>", "logs: bytes from the end of each stream").hideHelp())
      .option(
        "--purge",
        "unload: also remove the name's workspace ($HOME) on the node, kept otherwise across restarts and redeploys",
      ),
  ).action(
    async (
      verb: Verb,
      id: string,
      opts: ControllerVerbFlags & {
        graceMs: string;
        tail?: string;
        tailBytes?: string;
        follow?: boolean;
        purge?: boolean;
      },
      cmd: Command,
    ) => {
      const grace = integerFlag("--grace-ms", opts.graceMs, 0, 60_000);
      const tailBytes = opts.tailBytes === undefined ? 65_536 : integerFlag("--tail-bytes", opts.tailBytes, 0, 65_536);
      const tailLines = opts.tail === undefined ? undefined : integerFlag("--tail", opts.tail, 0, 1_000_000);
      const backend = await openBackend(backendFlags(opts, cmd));
      if (opts.purge && verb !== "unload")
        throw new CliError("--purge goes with unload only (it removes the workspace with the instance)");
      const run = () =>
        backend.instance(verb, id, { grace_ms: grace, tail_bytes: tailBytes, ...(opts.purge ? { purge: true } : {}) });
      const { lastLines } = await import("./follow.js");
      const cut = (r: VerbResult): VerbResult => {
        if (r.kind !== "ok" || r.verb !== "logs" || tailLines === undefined) return r;
        return {
          ...r,
          result: {
            ...r.result,
            stdout: lastLines(String(r.result.stdout ?? ""), tailLines),
            stderr: lastLines(String(r.result.stderr ?? ""), tailLines),
          },
        };
      };
      const raw = await run();
      const r = cut(raw);
      if (r.kind === "error" && r.code === "unknown_instance") throw unknownInstance(id, `${verb} ${id}: ${r.reason}`);
      if (r.kind === "unreachable")
        throw unreachableNode(`${verb} ${id} on ${r.node}`, `${r.reason}; nothing changed on the controller`);
      if (opts.follow && verb === "logs" && r.kind === "ok" && raw.kind === "ok") {
        process.stdout.write(String(r.result.stdout ?? ""));
        process.stderr.write(String(r.result.stderr ?? ""));
        // What was printed is the tail cut to --tail lines; what the next poll is matched against is the whole tail.
        const first = {
          instance: id,
          stdout: String(raw.result.stdout ?? ""),
          stderr: String(raw.result.stderr ?? ""),
        };
        await (await import("./watch.js")).followLog(
          1000,
          async () => {
            const next = await run();
            if (next.kind !== "ok") throw new CliError(verbText(next), 1);
            return { instance: id, stdout: String(next.result.stdout ?? ""), stderr: String(next.result.stderr ?? "") };
          },
          first,
        );
        return;
      }
      if (opts.follow) throw new CliError("-f/--follow: only with `berth instance logs ID`");
      // A refused or indeterminate answer keeps its own fields; `error` is the same sentence people read.
      answer(opts.json, { ok: r.kind === "ok", ...r, ...(r.kind === "ok" ? {} : { error: verbText(r) }) }, verbText(r));
      if (r.kind !== "ok") process.exitCode = 1;
    },
  );

  controllerFlags(
    watchFlags(
      program
        .command("unsettled")
        .description("decisions whose lost answer could not be reconciled yet")
        .option("--settle", "ask their nodes now and adopt or release"),
    ),
  ).action(async (opts: ControllerVerbFlags & WatchFlags & { settle?: boolean }, cmd: Command) => {
    if (opts.settle && opts.watch) throw new CliError("--settle and --watch: settle once, then watch");
    const backend = await openBackend(backendFlags(opts, cmd));
    await listOrWatch(opts, async () => {
      const doc = await backend.unsettled(opts.settle === true);
      const rows = doc.unsettled.map((d) => [d.decision_id, d.name, d.node_id]);
      const head = doc.settled ? `settled: ${doc.settled.adopted} adopted, ${doc.settled.settledEmpty} released\n` : "";
      const body = rows.length
        ? renderTable(["DECISION", "NAME", "NODE"], rows, { palette: stdoutPalette(opts.json) })
        : "no unsettled decisions";
      return { doc, text: `${head}${body}` };
    });
  });
}

/** `-l` judged here, before any backend, so a bad selector reads the same locally and through a server. */
async function refuseBadSelector(selector: string | undefined): Promise<void> {
  if (selector === undefined) return;
  const { parseSelector } = await import("../core/agents/labels.js");
  const parsed = parseSelector(selector);
  if (!parsed.ok) throw invalidInput(`-l: ${parsed.error}`);
}
