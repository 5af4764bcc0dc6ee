/**
 * `berth deploy FILE|-f FILE|-f -`, `berth agents`, `berth agent status|logs|stop|replace NAME` (issue 7): one
 * declarative deploy over both targets, asked of the controller this invocation talks to (backends/). Translation
 * only (issue 14.1): flags in, the controller's documents out. Human output by default, one JSON document with
 * `--json`. Exit status 0 when the agent is where the spec wants it (or on its way), 1 when berth could not or would
 * not act (the message says why and what to do), 2 for usage or I/O. Registration loads only commander (issue 19).
 */
import { readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { Argument, type Command, Option } from "commander";
import type { AgentState, HistoryAnswer } from "../agents/index.js";
import { unreadable } from "../kit/file-errors.js";
import { type DeployDocument, openBackend, type SpecInput } from "./backends/index.js";
import { CliError, invalidInput } from "./errors.js";
import {
  backendFlags,
  type ControllerVerbFlags,
  controllerFlags,
  integerFlag,
  kubeContextFlag,
  watchFlags,
} from "./flags.js";
import { describeText } from "./describe.js";
import { answer, wideOutput } from "./output.js";
import { paintSeen, stdoutPalette } from "./style.js";
import { seenText } from "../core/mesh/instance-observation.js";
import { renderTable } from "./table.js";
import type { DeployPlan } from "../core/agents/deploy-plan.js";

/** A spec from a file, or from stdin for `-` (its relative paths then resolve against the current directory). */
export function readSpecInput(file: string): SpecInput {
  if (file === "-") {
    let text: string;
    try {
      text = readFileSync(0, "utf8");
    } catch (error) {
      throw invalidInput(
        `-: cannot read the agent spec from stdin (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    return { path: join(process.cwd(), "<stdin>"), text };
  }
  const path = resolve(file);
  try {
    return { path, text: readFileSync(path, "utf8") };
  } catch (error) {
    // Issue 36 item 5: a missing file is named as missing (not "correct the named field").
    throw new CliError(
      `${unreadable(file, error, "the agent spec")}${isAbsolute(file) ? "" : ` (relative to ${process.cwd()})`}`,
      2,
      { kind: "file" },
    );
  }
}

function printDeploy(d: DeployDocument, json: boolean | undefined): void {
  const how =
    d.rounds.length > 0 ? ` [${d.rounds.map((x) => `${String(x.row)} → ${String(x.action)}`).join("; ")}]` : "";
  answer(json, d, `${d.message}${json ? "" : `\n${d.target}: ${d.outcome}${how}`}`);
  process.exitCode = d.ok ? 0 : 1;
}

/** Issue 36: the plan, for people: what would happen, the row and action, what it would replace, the explain. */
function printPlan(p: DeployPlan, json: boolean | undefined): void {
  const lines = [p.message, `${p.target}: row ${p.row} → ${p.action}`];
  if (p.replaces)
    lines.push(
      `would replace: ${p.replaces.instance}${p.replaces.node ? ` on node ${p.replaces.node}` : ""} (fence ${JSON.stringify(p.replaces.fence)})`,
    );
  if (p.placement) {
    lines.push(
      p.placement.node
        ? `would place on: ${p.placement.node}`
        : `would place on: no node (${p.placement.error ?? "none fits"})`,
    );
    if (p.placement.explain) lines.push(p.placement.explain);
  }
  answer(json, p, lines.join("\n"));
}

/** Issue 36: one line per revision, newest last, each followed by what changed from the one before. */
function historyText(h: HistoryAnswer): string {
  if (h.revisions.length === 0) return `${h.agent}: no deploy of it is on the chain`;
  const rows = h.revisions.map((r) => [
    String(r.revision) + (r.revision === h.current ? "*" : ""),
    new Date(r.deployed_ms).toISOString(),
    String(r.seq),
    r.spec_sha256.slice(0, 12),
    String(r.deploys),
    r.rollback_of === null ? "" : `rollback of ${r.rollback_of}`,
  ]);
  const out = [
    renderTable(["REV", "DEPLOYED", "SEQ", "SPEC", "DEPLOYS", "NOTE"], rows, { palette: stdoutPalette(false) }),
  ];
  for (const r of h.revisions) {
    if (r.revision === 1) continue;
    out.push(`\n--- revision ${r.revision - 1} → ${r.revision}`);
    out.push(
      r.diff === null
        ? "(the text of one of them was not kept by this store)"
        : r.diff.length === 0
          ? "(same lines)"
          : r.diff.join("\n"),
    );
  }
  return `${out.join("\n")}\n(* deployed now; \`berth agent rollback ${h.agent} REV\` deploys an earlier one)`;
}

function stateTable(states: readonly AgentState[], json: boolean | undefined): string {
  if (states.length === 0) return "no agents; deploy one with `berth deploy FILE`";
  const wide = wideOutput();
  // Issue 15: LIFECYCLE is the node's state of the current instance (running, backoff, failed …), RESTARTS its supervisor's.
  const now = Date.now();
  const rows = states.map((s) => [
    s.name,
    s.target,
    // Issue 35: a stored row says when its node last reported its state (`running (seen 4s ago)`, `unknown (never seen)`).
    s.seen_ms === undefined ? s.state : seenText(s.state, s.seen_ms, now),
    s.lifecycle ?? "-",
    s.restarts === null || s.restarts === undefined ? "-" : String(s.restarts),
    s.instance ?? "-",
    ...(wide ? [s.row ?? "-", s.next ?? "-"] : []),
    s.error ??
      (s.last_deploy
        ? `last deploy failed: ${s.last_deploy}`
        : s.next && s.next !== "no-op"
          ? `next deploy: ${s.next}`
          : ""),
  ]);
  const palette = stdoutPalette(json);
  return renderTable(
    ["NAME", "TARGET", "STATE", "LIFECYCLE", "RESTARTS", "INSTANCE", ...(wide ? ["ROW", "NEXT"] : []), "NOTE"],
    rows,
    {
      palette,
      paint: (column, text) => (column === 2 || column === 3 ? paintSeen(palette, text) : text),
    },
  );
}

/** Issue 36 item 9: `agent status` for people is its `-o json` document as describe lines (describe.ts), no JSON block. */
function stateText(s: AgentState): string {
  return describeText(s as unknown as Record<string, unknown>);
}

// ---- registration -------------------------------------------------------------------------------------------------

export const AGENT_VERBS = [
  "status",
  "logs",
  "stop",
  "start",
  "replace",
  "purge",
  "delete",
  "history",
  "rollback",
] as const;

type VerbFlags = ControllerVerbFlags & {
  file?: string;
  tail?: string;
  tailBytes?: string;
  wait?: boolean;
  follow?: boolean;
};

async function agentVerb(
  verb: string,
  name: string,
  rev: string | undefined,
  opts: VerbFlags,
  cmd: Command,
): Promise<void> {
  if (opts.follow && verb !== "logs") throw new CliError("-f/--follow: only with `berth agent logs NAME`");
  if (rev !== undefined && verb !== "rollback")
    throw new CliError(`REV: only with \`berth agent rollback NAME [REV]\`, not ${verb}`);
  const backend = await openBackend(backendFlags(opts, cmd));
  switch (verb) {
    case "history": {
      const h = await backend.agentHistory(name);
      answer(opts.json, h, historyText(h));
      return;
    }
    case "rollback": {
      const revision = rev === undefined ? undefined : integerFlag("REV", rev, 1, 1_000_000);
      printDeploy(await backend.agentRollback(name, revision), opts.json);
      return;
    }
    case "replace":
      printDeploy(
        await backend.agentReplace(name, opts.file === undefined ? undefined : readSpecInput(opts.file)),
        opts.json,
      );
      return;
    case "status": {
      const s = await backend.agentStatus(name);
      answer(opts.json, s, stateText(s));
      return;
    }
    case "logs": {
      const tailBytes = opts.tailBytes === undefined ? 65_536 : integerFlag("--tail-bytes", opts.tailBytes, 0, 65_536);
      const tailLines = opts.tail === undefined ? undefined : integerFlag("--tail", opts.tail, 0, 1_000_000);
      const { lastLines } = await import("./follow.js");
      const cut = (text: string) => (tailLines === undefined ? text : lastLines(text, tailLines));
      // Kubernetes streams the log as it is read (on this machine's files); the mesh and the API answer it whole.
      let streamed = false;
      const onChunk = (c: string) => {
        streamed = true;
        if (!opts.json) process.stdout.write(c);
      };
      const l = await backend.agentLogs(name, tailBytes, tailLines === undefined && !opts.follow ? onChunk : undefined);
      const shown = { ...l, stdout: cut(l.stdout), stderr: cut(l.stderr) };
      if (opts.follow) {
        process.stdout.write(shown.stdout);
        process.stderr.write(shown.stderr);
        await (await import("./watch.js")).followLog(1000, () => backend.agentLogs(name, tailBytes), l);
        return;
      }
      if (opts.json || !streamed)
        answer(opts.json, shown, `${shown.stdout}${shown.stderr ? `--- stderr ---\n${shown.stderr}` : ""}`);
      return;
    }
    case "stop": {
      const r = await backend.agentStop(name, Boolean(opts.wait));
      answer(opts.json, r, `${name}: ${r.message}`);
      process.exitCode = r.ok ? 0 : 1;
      return;
    }
    case "start":
      // Issue 33: a stop is final; this (or a deploy) is what runs the agent again.
      printDeploy(await backend.agentStart(name), opts.json);
      return;
    case "delete": {
      const r = await backend.agentDelete(name);
      answer(opts.json, r, r.message);
      process.exitCode = r.ok ? 0 : 1;
      return;
    }
    case "purge": {
      const r = await backend.agentPurge(name);
      answer(opts.json, r, `${name}: ${r.message}; \`berth deploy\` starts it again with an empty workspace`);
      process.exitCode = r.ok ? 0 : 1;
      return;
    }
    default:
      throw new CliError(`unknown verb ${verb}; one of ${AGENT_VERBS.join(", ")}`);
  }
}

export function registerAgentCommands(program: Command): void {
  kubeContextFlag(
    controllerFlags(
      program
        .command("deploy [file]")
        .description(
          "make the agent in FILE run, once, on its target (mesh or kubernetes); deploying the same spec again does nothing",
        )
        .option("-f, --file <file>", "the agent spec (YAML or JSON); - reads it from stdin")
        .option(
          "--dry-run",
          "say what the deploy would do (the row and action; Kubernetes: create, no-op, which pod a fenced replace would delete; mesh: which node and why) and do nothing",
        ),
    ),
  ).action(
    async (file: string | undefined, opts: ControllerVerbFlags & { file?: string; dryRun?: boolean }, cmd: Command) => {
      if (file !== undefined && opts.file !== undefined)
        throw new CliError("give the spec once: either FILE or -f FILE");
      const from = file ?? opts.file;
      if (from === undefined)
        throw new CliError("deploy needs an agent spec: berth deploy FILE, or -f FILE (-f - reads stdin)");
      const spec = readSpecInput(from);
      const backend = await openBackend(backendFlags(opts, cmd));
      if (opts.dryRun) {
        printPlan(await backend.planDeploy(spec), opts.json);
        return;
      }
      printDeploy(await backend.deploy(spec), opts.json);
    },
  );

  kubeContextFlag(
    controllerFlags(
      watchFlags(
        program
          .command("agents")
          .description(
            "every agent deployed from this berth home, with its state on its target (-o wide: row and next action); on this home's files, mesh agents as last seen unless --refresh",
          )
          .option(
            "-l, --selector <selector>",
            "only the agents whose metadata.labels match: key=value, key!=value, key, !key (commas: all must hold)",
          )
          .option(
            "--refresh",
            "ask every node for its mesh agents' state now (a running berth serve always answers live)",
          ),
      ),
    ),
  ).action(
    async (
      opts: ControllerVerbFlags & { watch?: boolean; interval: string; selector?: string; refresh?: boolean },
      cmd: Command,
    ) => {
      // Judged here, so a bad selector reads the same locally and through a server.
      if (opts.selector !== undefined) {
        const { parseSelector } = await import("../core/agents/labels.js");
        const parsed = parseSelector(opts.selector);
        if (!parsed.ok) throw invalidInput(`-l: ${parsed.error}`);
      }
      const backend = await openBackend(backendFlags(opts, cmd));
      const ask = async () => {
        const states = await backend.agents(opts.refresh === true, opts.selector);
        const text = opts.json ? "" : stateTable(states, opts.json);
        const { STORED_STATE_HINT, storedStateNeedsHint } = await import("../mesh/controller/views.js");
        // Issue 35: said once, after the table, not per row; only of a stored list with a row never seen or seen long ago.
        return {
          doc: { agents: states },
          text: !opts.json && storedStateNeedsHint(states, Date.now()) ? `${text}\n${STORED_STATE_HINT}` : text,
        };
      };
      if (!opts.watch) {
        const { doc, text } = await ask();
        answer(opts.json, doc, text);
        return;
      }
      const seconds = Number(opts.interval);
      if (!Number.isFinite(seconds) || seconds < 0.2 || seconds > 3600)
        throw new CliError(`--interval: ${JSON.stringify(opts.interval)} must be a number of seconds 0.2…3600`);
      await (await import("./watch.js")).watchList(seconds * 1000, opts.json, ask);
    },
  );

  kubeContextFlag(
    controllerFlags(
      program
        .command("agent")
        .addArgument(new Argument("<verb>", "what to do").choices(AGENT_VERBS))
        .argument("<name>", "the agent's metadata.name")
        .argument(
          "[rev]",
          "rollback: the revision to deploy again (default: the one before the current; `berth agent history NAME` lists them)",
        )
        .description(
          `act on one agent by name: ${AGENT_VERBS.join(", ")} (history: the spec revisions deployed, from the chain, with what changed; rollback [REV]: deploy an earlier revision again; start: run a stopped agent again from the spec last deployed; replace: stop the running instance now and start one from the spec, keeping its workspace; purge: unload it and remove its workspace; delete: remove its record once nothing of it runs)`,
        )
        .option("--file <file>", "replace: deploy this spec instead of the one last deployed (- reads stdin)")
        .option("-n, --tail <lines>", "logs: the last N lines of each stream (mesh: of at most its last 64 KiB)")
        .option("-f, --follow", "logs: keep printing what the agent writes, until Ctrl-C")
        .addOption(new Option("--tail-bytes <n>", "logs: bytes from the end of each stream (mesh)").hideHelp())
        .option(
          "--wait",
          "stop: wait until the instance is gone (Kubernetes: the pod and its Secret; a mesh stop answers once the node stopped it)",
        ),
    ),
  ).action(agentVerb);
}
