/**
 * The Kubernetes keeper's ports over an `AgentsEnv` (issue 16), and its tick in `berth serve`: the registry's
 * Kubernetes agents resolved from their specs (the nsec read as a deploy reads it), the deploy verb as the replace,
 * and alerts as `k8s.alert` records on the Kubernetes chain, every one attributed to the loop (`LOOP_ACTOR`, the
 * same actor the mesh loop names).
 */
import { kubernetesDeployRequest } from "../../core/agents/kubernetes-request.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { prepareDeploy } from "../../kubernetes/prepare.js";
import { LOOP_ACTOR } from "../actor.js";
import { err, ok } from "../../kit/result.js";
import { startTick } from "../../kit/tick.js";
import { deployAgent } from "../../agents/deploy.js";
import type { AgentsEnv } from "../../agents/env.js";
import { listAgents } from "../../agents/lookup.js";
import { readNsec, specFromText } from "../../agents/spec-file.js";
import { type KeeperPorts, type KeptAgent, KubernetesKeeper } from "./keeper.js";

export function keeperPorts(
  env: AgentsEnv,
  o: {
    readonly shouldAct: () => boolean | Promise<boolean>;
    readonly log: (message: string, fields?: Record<string, unknown>) => void;
  },
): KeeperPorts {
  return {
    now: () => env.kubernetes.clock.now(),
    shouldAct: o.shouldAct,
    log: o.log,
    agents: async () => {
      const agents: KeptAgent[] = [];
      const unusable: Array<{ name: string; why: string }> = [];
      for (const record of await listAgents(env)) {
        if (record.target !== "kubernetes") continue;
        const loaded = specFromText(record.spec_text, record.spec_path);
        if (!loaded.ok) {
          unusable.push({ name: record.name, why: loaded.error });
          continue;
        }
        const nsec = readNsec(loaded.value, env.processEnv ?? process.env);
        if (!nsec.ok) {
          unusable.push({ name: record.name, why: nsec.error });
          continue;
        }
        const prepared = prepareDeploy(kubernetesDeployRequest(loaded.value.spec, nsec.value), {
          requireCommand: true,
        });
        if (!prepared.ok) {
          unusable.push({ name: record.name, why: `${record.spec_path}: ${prepared.error}` });
          continue;
        }
        agents.push({
          name: record.name,
          loaded: loaded.value,
          policy: loaded.value.spec.spec.restart,
          context: prepared.value.inputs.config.context,
          namespace: prepared.value.inputs.config.namespace,
          identity: prepared.value.inputs.identity,
        });
      }
      return { agents, unusable };
    },
    connect: (context) => env.kubernetes.connect(context),
    replace: async (agent, verdict) => {
      const done = await deployAgent(env, agent.loaded, {
        loop: { onlyReplacing: { uid: verdict.fence.uid }, by: LOOP_ACTOR },
      });
      if (!done.ok) return err(done.error.message);
      return done.value.result.ok ? ok() : err(done.value.result.message);
    },
    alert: async (agent, reason, why) => {
      const audit = await env.kubernetes.openAudit();
      try {
        const payload: JsonObject = { phase: "alert", agent: agent.name, reason, why, by: LOOP_ACTOR };
        if (agent.namespace !== undefined) payload.namespace = agent.namespace;
        if (agent.pod !== undefined) payload.pod = agent.pod;
        await audit.record("k8s.alert", payload);
      } finally {
        await audit.close();
      }
    },
  };
}

export interface KubernetesKeeping {
  readonly keeper: KubernetesKeeper;
  /** Stops the tick, the watches and the connections, after the pass in flight. */
  stop(): Promise<void>;
}

/** A pass at once and then every `tickMs`, one at a time (a slow pass delays the next, never piles up). */
export function startKubernetesKeeper(
  ports: KeeperPorts,
  tickMs: number,
  onError: (error: unknown) => void,
): KubernetesKeeping {
  const keeper = new KubernetesKeeper(ports);
  const tick = startTick(() => keeper.pass(), tickMs, onError);
  return {
    keeper,
    stop: async () => {
      await tick.stop();
      await keeper.stop();
    },
  };
}
