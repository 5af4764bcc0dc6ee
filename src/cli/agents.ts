/**
 * `berth deploy FILE`, `berth agents`, `berth agent status|logs|stop|replace NAME` (issue 7): one declarative deploy
 * over both targets. Wiring only: the spec and the decisions live in `core/agents`, the observing and acting in
 * `src/agents` (mesh through `MeshController`, Kubernetes through the backend's reconcile loop and verbs). Human
 * output by default, one JSON document with `--json`. Exit status 0 when the agent is where the spec wants it (or on
 * its way), 1 when berth could not or would not act (the message says why and what to do), 2 for usage or I/O.
 */
import { resolve } from "node:path";
import { Argument, type Command } from "commander";
import { recordKubernetesDeploy, recordMeshDeploy } from "../agents/audit.js";
import { deployKubernetesAgent, type PreparedDeploy, refOf } from "../agents/kubernetes.js";
import { currentInstance, deployMeshAgent, type MeshAgentDeps } from "../agents/mesh.js";
import { type AgentRecord, AgentRegistry } from "../agents/registry.js";
import { type LoadedSpec, loadSpecFile, meshIntentOf, readNsec, specFromText } from "../agents/spec-file.js";
import { type AgentState, kubernetesAgentState, meshAgentState, unknownAgentState } from "../agents/state.js";
import { type AgentDeployResult, deployEventPayload } from "../core/agents/deploy-event.js";
import { kubernetesDeployRequest } from "../core/agents/kubernetes-request.js";
import { openK8sChain } from "../kubernetes/audit.js";
import type { Cluster } from "../kubernetes/cluster.js";
import { realClock } from "../kubernetes/clock.js";
import { boundedStderrLogger } from "../kubernetes/log.js";
import { prepareDeploy } from "../kubernetes/prepare.js";
import { settingsFromEnv } from "../kubernetes/settings.js";
import { stop as k8sStop } from "../kubernetes/verbs.js";
import { NodeClient } from "../mesh/client/node-client.js";
import { TcpConnector } from "../mesh/transport/tcp.js";
import { connect } from "./cluster-connect.js";
import { CliError, invalidInput, unknownAgent, unreachableNode } from "./errors.js";
import { answer } from "./output.js";
import { withController } from "./controller.js";
import { berthHome, defaultPaths } from "./paths.js";
import { startProgress, withSpinner } from "./progress.js";
import { paintState, stdoutPalette } from "./style.js";
import { renderTable } from "./table.js";
import { berthVersion } from "../version.js";

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

// ---- the two targets' plumbing ----------------------------------------------------------------------------------

async function withMesh<T>(opts: CommonOptions, fn: (deps: MeshAgentDeps) => Promise<T>): Promise<T> {
  return withController(opts, (controller, key) => fn({ controller, client: new NodeClient({ key, connector: new TcpConnector() }) }));
}

function prepareKubernetes(loaded: LoadedSpec): PreparedDeploy {
  const nsec = readNsec(loaded, process.env);
  if (!nsec.ok) throw new CliError(nsec.error);
  const prepared = prepareDeploy(kubernetesDeployRequest(loaded.spec, nsec.value), { requireCommand: true });
  if (!prepared.ok) throw new CliError(`${loaded.path}: ${prepared.error}`, 1);
  return prepared;
}

async function withCluster<T>(context: string | null, fn: (cluster: Cluster) => Promise<T>): Promise<T> {
  const c = await connect(context);
  if (!c.ok) throw new CliError(c.error, 1);
  try {
    return await fn(c.cluster);
  } finally {
    c.cluster.close();
  }
}

function k8sSettings() {
  const s = settingsFromEnv(process.env);
  if (!s.ok) throw new CliError(s.error);
  return s.settings;
}

function openRegistry(opts: CommonOptions): AgentRegistry {
  try {
    return AgentRegistry.open(resolve(opts.dataDir ?? berthHome()));
  } catch (error) {
    throw new CliError(`cannot open the agent registry: ${(error as Error).message}`);
  }
}

function recordOf(name: string, opts: CommonOptions): { record: AgentRecord; loaded: LoadedSpec } {
  const registry = openRegistry(opts);
  let record: AgentRecord | null;
  try {
    record = registry.get(name);
  } finally {
    registry.close();
  }
  if (record === null) throw unknownAgent(name);
  const loaded = specFromText(record.spec_text, record.spec_path);
  if (!loaded.ok) throw new CliError(loaded.error);
  return { record, loaded: loaded.value };
}

// ---- deploy -------------------------------------------------------------------------------------------------------

async function runDeploy(loaded: LoadedSpec, opts: CommonOptions, userReplace: boolean): Promise<AgentDeployResult> {
  const spec = loaded.spec;
  const name = spec.metadata.name;
  let result: AgentDeployResult;
  let intent: string;
  if (spec.spec.target === "mesh") {
    const mi = meshIntentOf(loaded);
    if (!mi.ok) throw new CliError(mi.error);
    intent = mi.value.intent;
    result = await withMesh(opts, async (deps) => {
      const r = await withSpinner(`deploying ${name} to the mesh`, opts.json, () => deployMeshAgent(deps, { agent: name, spec: spec.spec, packageDir: mi.value.packageDir, intent: mi.value.intent }, { userReplace }));
      recordMeshDeploy(deps.controller, r);
      return r;
    });
  } else {
    const prepared = prepareKubernetes(loaded);
    intent = prepared.fingerprint;
    const settings = k8sSettings();
    const home = berthHome();
    result = await withCluster(opts.context ?? prepared.inputs.config.context, async (cluster) => {
      let audit: ReturnType<typeof openK8sChain>;
      try {
        audit = openK8sChain(home);
      } catch (error) {
        throw new CliError(`could not open the audit chain: ${(error as Error).message}`, 1);
      }
      const progress = startProgress({ json: opts.json });
      try {
        return await deployKubernetesAgent(
          {
            cluster,
            clock: realClock,
            audit,
            log: boundedStderrLogger(),
            settings,
            version: berthVersion(),
            onProgress: (line) => progress.update(line),
          },
          name,
          prepared,
          { userReplace },
        );
      } finally {
        progress.stop();
        audit.close();
      }
    });
    recordKubernetesDeploy(home, result);
  }
  const registry = openRegistry(opts);
  try {
    registry.remember({ name, target: spec.spec.target, spec_path: loaded.path, spec_text: loaded.text, intent, deployed_ms: Date.now() });
  } finally {
    registry.close();
  }
  return result;
}

function printDeploy(r: AgentDeployResult, json: boolean | undefined): void {
  const first = r.rounds[0];
  const how = first ? ` [${r.rounds.map((x) => `${x.row} → ${x.action}`).join("; ")}]` : "";
  answer(json, deployEventPayload(r), `${r.message}${json ? "" : `\n${r.target}: ${r.outcome}${how}`}`);
  process.exitCode = r.ok ? 0 : 1;
}

// ---- status of an agent on its target -----------------------------------------------------------------------------

async function kubernetesState(rec: AgentRecord, loaded: LoadedSpec, opts: CommonOptions): Promise<AgentState> {
  const nsec = readNsec(loaded, process.env);
  if (!nsec.ok) return unknownAgentState(rec, nsec.error);
  const prepared = prepareDeploy(kubernetesDeployRequest(loaded.spec, nsec.value), { requireCommand: false });
  if (!prepared.ok) return unknownAgentState(rec, prepared.error);
  const c = await connect(opts.context ?? prepared.inputs.config.context);
  if (!c.ok) return unknownAgentState(rec, c.error);
  try {
    return await kubernetesAgentState(c.cluster, realClock, rec.name, prepared);
  } finally {
    c.cluster.close();
  }
}

function stateTable(states: readonly AgentState[], json: boolean | undefined): string {
  if (states.length === 0) return "no agents; deploy one with `berth deploy FILE`";
  const rows = states.map((s) => [s.name, s.target, s.state, s.instance ?? "-", s.error ?? (s.next && s.next !== "no-op" ? `next deploy: ${s.next}` : "")]);
  const palette = stdoutPalette(json);
  return renderTable(["NAME", "TARGET", "STATE", "INSTANCE", "NOTE"], rows, { palette, paint: (column, text) => (column === 2 ? paintState(palette, text) : text) });
}

// ---- registration -------------------------------------------------------------------------------------------------

const AGENT_VERBS = ["status", "logs", "stop", "replace"] as const;

export function registerAgentCommands(program: Command): void {
  withCommon(
    program
      .command("deploy <file>")
      .description("make the agent in FILE run, once, on its target (mesh or kubernetes); deploying the same spec again does nothing"),
  ).action(async (file: string, opts: CommonOptions) => {
    const loaded = loadSpecFile(file);
    if (!loaded.ok) throw invalidInput(loaded.error);
    printDeploy(await runDeploy(loaded.value, opts, false), opts.json);
  });

  withCommon(program.command("agents").description("every agent deployed from this berth home, with its state on its target")).action(async (opts: CommonOptions) => {
    const registry = openRegistry(opts);
    let records: AgentRecord[];
    try {
      records = registry.list();
    } finally {
      registry.close();
    }
    const states: AgentState[] = [];
    const mesh = records.filter((r) => r.target === "mesh");
    if (mesh.length > 0) await withMesh(opts, async (deps) => {
      for (const rec of mesh) states.push(await meshAgentState(deps, rec));
    });
    for (const rec of records.filter((r) => r.target === "kubernetes")) {
      const loaded = specFromText(rec.spec_text, rec.spec_path);
      states.push(loaded.ok ? await kubernetesState(rec, loaded.value, opts) : unknownAgentState(rec, loaded.error));
    }
    states.sort((a, b) => (a.name < b.name ? -1 : 1));
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
  ).action(async (verb: string, name: string, opts: CommonOptions & { file?: string; tailBytes: string; wait?: boolean }) => {
    if (verb === "replace") {
      let loaded: LoadedSpec;
      if (opts.file !== undefined) {
        const l = loadSpecFile(opts.file);
        if (!l.ok) throw invalidInput(l.error);
        if (l.value.spec.metadata.name !== name) throw new CliError(`${opts.file} describes agent ${l.value.spec.metadata.name}, not ${name}`);
        loaded = l.value;
      } else {
        loaded = recordOf(name, opts).loaded;
      }
      printDeploy(await runDeploy(loaded, opts, true), opts.json);
      return;
    }
    const { record, loaded } = recordOf(name, opts);
    if (record.target === "mesh") {
      await withMesh(opts, async (deps) => {
        if (verb === "status") {
          const s = await meshAgentState(deps, record);
          answer(opts.json, s, `${s.name} (mesh): ${s.state}${s.instance ? ` — ${s.instance}` : ""}\nrow: ${s.row}; a deploy now would: ${s.next}\n${JSON.stringify(s.observation, null, 2)}`);
          return;
        }
        const { instance } = await currentInstance(deps, name);
        if (instance === null) throw new CliError(`${name} has no instance on any node that answered; nothing to ${verb}`, 1);
        const r = await deps.controller.instance(verb === "logs" ? "logs" : "stop", instance.instanceId, verb === "logs" ? { tail_bytes: Number(opts.tailBytes) || 65_536 } : {});
        if (r.kind === "unreachable") throw unreachableNode(`${verb} ${name} (${instance.instanceId}) on ${r.node}`, r.reason);
        if (r.kind !== "ok") throw new CliError(`${verb} ${name} (${instance.instanceId}): ${r.kind}${"reason" in r ? `: ${r.reason}` : ""}`, 1);
        if (verb === "logs") answer(opts.json, r.result, `${String(r.result.stdout ?? "")}${r.result.stderr ? `--- stderr ---\n${String(r.result.stderr)}` : ""}`);
        else answer(opts.json, { ok: true, agent: name, instance: instance.instanceId, result: r.result }, `${name}: stopped ${instance.instanceId}; \`berth deploy\` starts it again`);
      });
      return;
    }
    // kubernetes
    if (verb === "status") {
      const s = await kubernetesState(record, loaded, opts);
      answer(opts.json, s, `${s.name} (kubernetes): ${s.state}${s.instance ? ` — pod ${s.instance}` : ""}${s.error ? `\n${s.error}` : `\nrow: ${s.row}; a deploy now would: ${s.next}\n${JSON.stringify(s.observation, null, 2)}`}`);
      return;
    }
    const prepared = prepareKubernetes(loaded);
    const ref = refOf(prepared);
    await withCluster(opts.context ?? prepared.inputs.config.context, async (cluster) => {
      if (verb === "logs") {
        let log = "";
        const r = await cluster.readLog(ref.namespace, ref.identity.podName, {
          follow: false,
          onChunk: (c) => {
            if (opts.json) log += c;
            else process.stdout.write(c);
          },
        });
        if (r.kind === "absent") throw new CliError(`${name}: pod ${ref.identity.podName} does not exist`, 1);
        if (r.kind === "error") throw new CliError(`${name}: could not read the log of ${ref.identity.podName}`, 1);
        if (opts.json) answer(true, { agent: name, pod: ref.identity.podName, stdout: log }, "");
        return;
      }
      const audit = openK8sChain(berthHome());
      try {
        const r = await k8sStop({ cluster, clock: realClock, audit, log: boundedStderrLogger(), version: berthVersion() }, ref, { wait: Boolean(opts.wait) });
        answer(opts.json, { ok: r.ok, agent: name, message: r.message }, r.ok ? `${name}: ${r.message}; \`berth deploy\` starts it again` : `${name}: ${r.message}`);
        process.exitCode = r.ok ? 0 : 1;
      } finally {
        audit.close();
      }
    });
  });
}
