/**
 * `berth deploy FILE`, `berth agents`, `berth agent status|logs|stop|replace NAME` (issue 7): one declarative deploy
 * over both targets. Translation only (issue 14.1): flags into an `AgentsEnv` and calls of `src/agents`, answers into
 * output, failures into exit codes. Human output by default, one JSON document with `--json`. Exit status 0 when the
 * agent is where the spec wants it (or on its way), 1 when berth could not or would not act (the message says why and
 * what to do), 2 for usage or I/O.
 */
import { resolve } from "node:path";
import { Argument, type Command } from "commander";
import { type AgentState, type AgentsEnv, AgentRegistry, agentLogs, agentState, agentStates, type DeployDone, deployAgent, type FailureMap, loadSpecFile, type Outcome, replaceAgent, stopAgent, translateFailure, unwrap } from "../agents/index.js";
import { deployEventPayload } from "../core/agents/deploy-event.js";
import { openK8sChain } from "../kubernetes/audit.js";
import { realClock } from "../kubernetes/clock.js";
import { boundedStderrLogger } from "../kubernetes/log.js";
import { NodeClient } from "../mesh/client/node-client.js";
import { berthVersion } from "../version.js";
import { connect } from "./cluster-connect.js";
import { withController } from "./controller.js";
import { CliError, invalidInput, unknownAgent, unreachableNode } from "./errors.js";
import { answer } from "./output.js";
import { berthHome, defaultPaths } from "./paths.js";
import { startProgress, withSpinner } from "./progress.js";
import { paintState, stdoutPalette } from "./style.js";
import { renderTable } from "./table.js";

interface CommonOptions {
  readonly dataDir?: string;
  readonly keyFile?: string;
  readonly context?: string;
  readonly json?: boolean;
}

function withCommon(cmd: Command): Command {
  return cmd
    .option("--data-dir <dir>", "berth home for mesh agents (controller.db, agents.db, peers.json …)", berthHome())
    .option("--key-file <path>", "the mesh controller's identity key", defaultPaths.controllerKey())
    .option("--context <ctx>", "kubeconfig context for Kubernetes agents (default: provider_config.context, else current)")
    .option("--json", "print one JSON document");
}

// ---- flags into an environment, failures into exit codes ---------------------------------------------------------

function openRegistry(opts: CommonOptions): AgentRegistry {
  try {
    return AgentRegistry.open(resolve(opts.dataDir ?? berthHome()));
  } catch (error) {
    throw new CliError(`cannot open the agent registry: ${(error as Error).message}`);
  }
}

/** The mesh through a controller opened for this command; Kubernetes through the kubeconfig (--context wins). */
function agentsEnv(opts: CommonOptions): AgentsEnv {
  const home = berthHome();
  return {
    openRegistry: () => openRegistry(opts),
    mesh: { session: (fn) => withController(opts, (controller, key, connector) => fn({ controller, client: new NodeClient({ key, connector, onSend: controller.onSend }) })) },
    kubernetes: { connect: (context) => connect(opts.context ?? context), openAudit: () => openK8sChain(home), home, clock: realClock, log: boundedStderrLogger(), version: berthVersion() },
    watch: { waiting: (what, fn) => withSpinner(what, opts.json, fn), conditions: () => startProgress({ json: opts.json }) },
    now: Date.now,
  };
}

const CLI_ERRORS: FailureMap<CliError> = {
  unknown_agent: (f) => unknownAgent(f.agent),
  instance_verb_failed: (f) =>
    f.result.kind === "unreachable" ? unreachableNode(`${f.verb} ${f.agent} (${f.instance}) on ${f.result.node}`, f.result.reason) : new CliError(f.message, 1),
  spec_unusable: (f) => new CliError(f.message, f.usage ? 2 : 1),
  agent_mismatch: (f) => new CliError(f.message),
  spec_unreadable: (f) => new CliError(f.message),
  settings_invalid: (f) => new CliError(f.message),
  audit_unavailable: (f) => new CliError(f.message, 1),
  cluster_not_configured: (f) => new CliError(f.message, 1),
  cluster_unreachable: (f) => new CliError(f.message, 1),
  no_instance: (f) => new CliError(f.message, 1),
  pod_absent: (f) => new CliError(f.message, 1),
  log_unreadable: (f) => new CliError(f.message, 1),
};

const answered = <T>(o: Outcome<T>): T => unwrap(o, (f) => translateFailure(CLI_ERRORS, f));

function printDeploy(done: Outcome<DeployDone>, json: boolean | undefined): void {
  const r = answered(done).result;
  const first = r.rounds[0];
  const how = first ? ` [${r.rounds.map((x) => `${x.row} → ${x.action}`).join("; ")}]` : "";
  answer(json, deployEventPayload(r), `${r.message}${json ? "" : `\n${r.target}: ${r.outcome}${how}`}`);
  process.exitCode = r.ok ? 0 : 1;
}

function stateTable(states: readonly AgentState[], json: boolean | undefined): string {
  if (states.length === 0) return "no agents; deploy one with `berth deploy FILE`";
  const rows = states.map((s) => [s.name, s.target, s.state, s.instance ?? "-", s.error ?? (s.next && s.next !== "no-op" ? `next deploy: ${s.next}` : "")]);
  const palette = stdoutPalette(json);
  return renderTable(["NAME", "TARGET", "STATE", "INSTANCE", "NOTE"], rows, { palette, paint: (column, text) => (column === 2 ? paintState(palette, text) : text) });
}

function stateText(s: AgentState): string {
  const row = s.error ? s.error : `row: ${s.row}; a deploy now would: ${s.next}\n${JSON.stringify(s.observation, null, 2)}`;
  return `${s.name} (${s.target}): ${s.state}${s.instance ? ` — ${s.instance}` : ""}\n${row}`;
}

// ---- registration -------------------------------------------------------------------------------------------------

const AGENT_VERBS = ["status", "logs", "stop", "replace"] as const;

type VerbFlags = CommonOptions & { file?: string; tailBytes: string; wait?: boolean };

async function agentVerb(verb: string, name: string, opts: VerbFlags): Promise<void> {
  const env = agentsEnv(opts);
  switch (verb) {
    case "replace": {
      let given: Parameters<typeof replaceAgent>[2];
      if (opts.file !== undefined) {
        const l = loadSpecFile(opts.file);
        if (!l.ok) throw invalidInput(l.error);
        given = { loaded: l.value, from: opts.file };
      }
      printDeploy(await replaceAgent(env, name, given), opts.json);
      return;
    }
    case "status": {
      const s = answered(await agentState(env, name));
      answer(opts.json, s, stateText(s));
      return;
    }
    case "logs": {
      // Kubernetes streams the log as it is read; the mesh answers it whole.
      let streamed = false;
      const onChunk = (c: string) => {
        streamed = true;
        if (!opts.json) process.stdout.write(c);
      };
      const l = answered(await agentLogs(env, name, { tailBytes: Number(opts.tailBytes) || 65_536, onChunk }));
      if (opts.json || !streamed) answer(opts.json, l, `${l.stdout}${l.stderr ? `--- stderr ---\n${l.stderr}` : ""}`);
      return;
    }
    case "stop": {
      const r = answered(await stopAgent(env, name, { wait: Boolean(opts.wait) }));
      answer(opts.json, r, r.ok ? `${name}: ${r.message}; \`berth deploy\` starts it again` : `${name}: ${r.message}`);
      process.exitCode = r.ok ? 0 : 1;
      return;
    }
    default:
      throw new CliError(`unknown verb ${verb}; one of ${AGENT_VERBS.join(", ")}`);
  }
}

export function registerAgentCommands(program: Command): void {
  withCommon(
    program
      .command("deploy <file>")
      .description("make the agent in FILE run, once, on its target (mesh or kubernetes); deploying the same spec again does nothing"),
  ).action(async (file: string, opts: CommonOptions) => {
    const loaded = loadSpecFile(file);
    if (!loaded.ok) throw invalidInput(loaded.error);
    printDeploy(await deployAgent(agentsEnv(opts), loaded.value), opts.json);
  });

  withCommon(program.command("agents").description("every agent deployed from this berth home, with its state on its target")).action(async (opts: CommonOptions) => {
    const states = await agentStates(agentsEnv(opts));
    answer(opts.json, { agents: states }, stateTable(states, opts.json));
  });

  withCommon(
    program
      .command("agent")
      .addArgument(new Argument("<verb>", "what to do").choices(AGENT_VERBS))
      .argument("<name>", "the agent's metadata.name")
      .description(`act on one agent by name: ${AGENT_VERBS.join(", ")} (replace: stop the running instance now and start one from the spec)`)
      .option("--file <file>", "replace: deploy this spec instead of the one last deployed")
      .option("--tail-bytes <n>", "logs: bytes from the end of each stream (mesh)", "65536")
      .option("--wait", "stop: wait until the instance is gone (Kubernetes)"),
  ).action(agentVerb);
}
