/**
 * The controller verbs on this machine's files: each call opens the controller in the home (controller.ts), does one
 * thing through `MeshController` or `src/agents`, and closes it — the way every verb worked before contexts. The
 * three lists without --refresh are answered read-only by stored.ts, which loads this file only when it must.
 */
import { resolve } from "node:path";
import {
  AgentRegistry,
  type AgentsEnv,
  agentHistory,
  agentLabels,
  agentLogs,
  agentState,
  agentStates,
  deleteAgent,
  deployAgent,
  type Outcome,
  planDeploy,
  purgeAgent,
  replaceAgent,
  rollbackAgent,
  selectedRecords,
  specFromText,
  startAgent,
  stopAgent,
  storedAgentStates,
  targetFor,
  unwrap,
} from "../../agents/index.js";
import { deployEventPayload } from "../../core/agents/deploy-event.js";
import { instanceAgent, parseSelector, rowsOfSelectedAgents } from "../../core/agents/labels.js";
import { realClock } from "../../kit/clock.js";
import { boundedStderrLogger } from "../../kit/log.js";
import { err, ok } from "../../kit/result.js";
import { NodeClient } from "../../mesh/client/node-client.js";
import { PlaceError } from "../../mesh/controller/index.js";
import {
  instancesWithState,
  storedInstances,
  targetRows,
  targetsSelected,
  targetsWithFacts,
} from "../../mesh/controller/views.js";
import { berthVersion } from "../../version.js";
import { connect } from "../cluster-connect.js";
import { ensureControllerKey, operatorIdentity, withController } from "../controller.js";
import { invalidInput, placeRefused } from "../errors.js";
import { openCliK8sAudit } from "../k8s-audit.js";
import { berthHome, defaultPaths } from "../paths.js";
import { startProgress, withSpinner } from "../progress.js";
import { agentFailureError } from "./failures.js";
import { localNodeAdmin } from "./node-admin-local.js";
import { homeRead, storedRead } from "./stored.js";
import type { BackendFlags, ControllerBackend, DeployDocument, SpecInput } from "./types.js";

const answered = <T>(o: Outcome<T>): T => unwrap(o, agentFailureError);

export function localBackend(flags: BackendFlags): ControllerBackend {
  const home = berthHome();
  const dataDir = resolve(flags.dataDir ?? home);
  const controllerFlags = {
    dataDir,
    ...(flags.keyFile ? { keyFile: flags.keyFile } : {}),
    ...(flags.database ? { database: flags.database } : {}),
  };
  const env: AgentsEnv = {
    registry: (fn) => {
      // The registry is in the controller store (issue 20), whose chain the controller key signs: a home that only
      // ever deployed to Kubernetes gets its default key on first use, as `berth serve` makes it (a --key-file the
      // user named is never made up: its absence stays an error).
      const keyFile = flags.keyFile ?? defaultPaths.controllerKey();
      if (keyFile === defaultPaths.controllerKey()) ensureControllerKey(keyFile);
      return withController({ ...controllerFlags, quiet: true }, (controller) =>
        fn(new AgentRegistry(controller.store)),
      );
    },
    mesh: {
      session: (fn) =>
        withController(controllerFlags, (controller, key, connector) =>
          fn({ controller, client: new NodeClient({ key, connector, onSend: controller.onSend }) }),
        ),
    },
    kubernetes: {
      connect: (context) => connect(flags.kubeContext ?? context),
      openAudit: () => openCliK8sAudit({ home, database: flags.database, keyFile: flags.keyFile }),
      home,
      clock: realClock,
      log: boundedStderrLogger(),
      version: berthVersion(),
    },
    watch: {
      waiting: (what, fn) => withSpinner(what, flags.json, fn),
      conditions: () => startProgress({ json: flags.json }),
    },
    now: Date.now,
  };
  const read = homeRead(dataDir, flags.database);
  const stored = storedRead({ ...flags, dataDir });
  const loaded = (spec: SpecInput) => {
    const l = specFromText(spec.text, spec.path);
    if (!l.ok) throw agentFailureError({ kind: "spec_invalid", message: l.error });
    return l.value;
  };
  const deployDoc = (r: ReturnType<typeof deployEventPayload>) => r as unknown as DeployDocument;
  return {
    where: "local",
    targets: (refresh, selector) => {
      const parsed = parseSelector(selector ?? "");
      if (!parsed.ok) throw invalidInput(`-l: ${parsed.error}`);
      // A node's labels come with its signed facts, which this process has only once it described the nodes: a
      // selector asks them (issue 36), as --refresh does; without either, the store as it is (issue 35).
      if (refresh || parsed.value.length > 0)
        return read(() =>
          withController(controllerFlags, async (c) =>
            targetsSelected(
              await targetsWithFacts(
                c,
                await withSpinner("describing every node", flags.json, () => c.refreshTargets()),
              ),
              parsed.value,
            ),
          ),
        );
      return stored(
        ["targets"],
        async (s) => targetRows(s.targets, [], s.admins),
        () => withController(controllerFlags, async (c) => targetsWithFacts(c, await c.targets())),
      );
    },
    addTarget: (addr, tier, key) =>
      withController(controllerFlags, async (c) => {
        const r = await c.addTarget(addr, tier, key);
        return r.ok
          ? ok((await targetsWithFacts(c, [r.value]))[0] as Awaited<ReturnType<typeof targetsWithFacts>>[number])
          : err(r.error);
      }),
    setTier: (ref, tier) => withController(controllerFlags, async (c) => c.setTier(ref, tier)),
    place: (order) =>
      withController(controllerFlags, async (c) => {
        try {
          return await withSpinner(
            order.dry_run ? "deciding where it would run" : "deciding and asking the node to run it",
            flags.json,
            () =>
              // A directory is named by its absolute path, as a serve on this machine is sent it (remote.ts): one text both ways.
              c.place({
                ...order,
                package: /^[0-9a-f]{64}$/.test(order.package) ? order.package : resolve(order.package),
              }),
          );
        } catch (error) {
          if (error instanceof PlaceError) throw placeRefused(error.code, error.message, error.constraints);
          throw error;
        }
      }),
    instances: (refresh, selector) => {
      const parsed = parseSelector(selector ?? "");
      if (!parsed.ok) throw invalidInput(`-l: ${parsed.error}`);
      const live = () =>
        read(() =>
          withController(controllerFlags, async (c, key, connector) => {
            // A fresh process knows no node's boot id until it describes it (a server keeps them fresh on its tick).
            await withSpinner("describing every node", flags.json, () => c.refreshTargets());
            const placements = await withSpinner("asking every node for its instances", flags.json, () =>
              instancesWithState(c, new NodeClient({ key, connector, onSend: c.onSend })),
            );
            return { placements, moved: await c.moves.moved() };
          }),
        );
      const all = refresh
        ? live()
        : stored(
            ["placements"],
            async (s) => ({ placements: storedInstances(s.placements, s.observations), moved: s.moved }),
            live,
          );
      if (parsed.value.length === 0) return all;
      // Issue 36: an instance carries its agent's metadata.labels (the registry's), one placed by hand none.
      return all.then(async (r) => ({
        ...r,
        placements: rowsOfSelectedAgents(r.placements, parsed.value, instanceAgent, await read(() => agentLabels(env))),
      }));
    },
    instance: (verb, id, opts) =>
      withController(controllerFlags, (c) =>
        c.instance(verb, id, { ...opts, operator: operatorIdentity(`berth instance ${verb}`) }),
      ),
    unsettled: (settle) =>
      withController(controllerFlags, async (c) => {
        const report = settle
          ? await withSpinner("asking the nodes of unsettled decisions", flags.json, () => c.settleReport())
          : null;
        return { settled: report, unsettled: await c.unsettled() };
      }),
    agents: (refresh, selector) => {
      const parsed = parseSelector(selector ?? "");
      if (!parsed.ok) throw invalidInput(`-l: ${parsed.error}`);
      const live = () => agentStates(env, parsed.value);
      return refresh
        ? read(live)
        : stored(
            ["agents"],
            (s) =>
              storedAgentStates(selectedRecords(s.agents, parsed.value), s, (known) =>
                targetFor(env, "kubernetes").states(known),
              ),
            live,
          );
    },
    deploy: async (spec) => deployDoc(deployEventPayload(answered(await deployAgent(env, loaded(spec))).result)),
    planDeploy: async (spec) => answered(await planDeploy(env, loaded(spec))),
    agentStatus: (name) => read(async () => answered(await agentState(env, name))),
    agentLogs: (name, tailBytes, onChunk) =>
      read(async () => answered(await agentLogs(env, name, { tailBytes, ...(onChunk ? { onChunk } : {}) }))),
    agentStop: async (name, wait) => {
      const r = answered(await stopAgent(env, name, { wait }));
      // The server's words (src/server/routes/agents.ts), so both answers read the same.
      return {
        ok: r.ok,
        agent: r.agent,
        instance: r.instance,
        message: r.ok ? `${r.message}; a deploy starts it again` : r.message,
        ...(r.already_stopped ? { already_stopped: true as const } : {}),
      };
    },
    agentPurge: async (name) => {
      const r = answered(await purgeAgent(env, name));
      return { ok: r.ok, agent: r.agent, instance: r.instance, message: r.message };
    },
    nodeAdmin: (verb, ref, reason) =>
      withController(controllerFlags, async (c) => localNodeAdmin(c, verb, ref, reason, flags.json)),
    agentHistory: (name) => read(async () => answered(await agentHistory(env, name))),
    agentRollback: async (name, revision) => {
      const r = answered(await rollbackAgent(env, name, revision));
      return deployDoc({ ...deployEventPayload(r.result), rollback_of: r.revision });
    },
    agentStart: async (name) => deployDoc(deployEventPayload(answered(await startAgent(env, name)).result)),
    agentDelete: async (name) => answered(await deleteAgent(env, name, operatorIdentity("berth agent delete"))),
    agentReplace: async (name, spec) =>
      deployDoc(
        deployEventPayload(
          answered(
            await replaceAgent(env, name, spec === undefined ? undefined : { loaded: loaded(spec), from: spec.path }),
          ).result,
        ),
      ),
  };
}
