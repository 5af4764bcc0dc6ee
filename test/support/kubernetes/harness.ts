/** A deploy harness over the fake cluster and a virtual clock: no sockets, no sleeps, fully deterministic. */
import { parseProviderConfig, type ProviderConfig } from "../../../src/core/kubernetes/config.js";
import { buildEnv } from "../../../src/core/kubernetes/env.js";
import { fingerprint } from "../../../src/core/kubernetes/intent.js";
import type { AgentIdentity } from "../../../src/core/kubernetes/naming.js";
import type { AgentSpec } from "../../../src/core/kubernetes/request.js";
import { agentA, configA } from "./fixtures.js";
import { WHO } from "./pods.js";
import { MemoryAudit } from "../../../src/kubernetes/audit.js";
import { VirtualClock } from "../../../src/kit/clock.js";
import { FakeCluster, type FakeClusterOptions } from "./fake-cluster.js";
import { memoryLogger } from "../../../src/kit/log.js";
import { type DeployDeps, type DeployInputs, type DeployReport, deploy } from "../../../src/kubernetes/converge.js";
import { DEFAULT_WAIT, type WaitSettings } from "../../../src/kubernetes/waiter.js";

export const NS = "buzz-agents-test";

export function inputsFor(
  agent: AgentSpec = agentA(),
  raw: Record<string, unknown> = configA,
  identity: AgentIdentity = WHO,
): DeployInputs {
  const cfg = parseProviderConfig(raw);
  if (!cfg.ok) throw new Error(cfg.error);
  const env = buildEnv(agent, cfg.value, "00000000");
  if (!env.ok) throw new Error(env.error);
  return { identity, config: cfg.value, env: env.value };
}

export function desiredFingerprint(inputs: DeployInputs): string {
  return fingerprint(inputs.config, Object.keys(inputs.env));
}

export interface Harness {
  readonly clock: VirtualClock;
  readonly fake: FakeCluster;
  readonly audit: MemoryAudit;
  readonly log: ReturnType<typeof memoryLogger>;
  readonly deps: DeployDeps;
  readonly inputs: DeployInputs;
  readonly config: ProviderConfig;
  deploy(opts?: { deadlineSeconds?: number; inputs?: DeployInputs }): Promise<DeployReport>;
  /** The simulated kubelet starts every new pod `afterMs` after it is created. */
  kubeletStartsAfter(afterMs: number): void;
  /** ...and its harness exits at once: `running`, then `terminated` `detectedAfterMs` later (the next relist), then Failed. */
  kubeletCrashesAtStart(afterMs: number, o?: { exitCode?: number; detectedAfterMs?: number }): void;
}

export function harness(
  options: FakeClusterOptions & { wait?: Partial<WaitSettings>; namespace?: boolean } = {},
): Harness {
  const clock = new VirtualClock();
  const fake = new FakeCluster(clock, options);
  if (options.namespace !== false) fake.addNamespace(NS);
  const audit = new MemoryAudit();
  const log = memoryLogger();
  let seq = 0x0f3a91cc;
  const inputs = inputsFor();
  const deps: DeployDeps = {
    cluster: fake,
    clock,
    audit,
    log,
    random32: () => seq++,
    wait: { ...DEFAULT_WAIT, ...(options.wait ?? {}) },
    mode: "cli",
    version: "test",
  };
  return {
    clock,
    fake,
    audit,
    log,
    deps,
    inputs,
    config: inputs.config,
    deploy: (opts = {}) => {
      const d = opts.deadlineSeconds ?? 600;
      const start = clock.now();
      return clock.run(
        deploy(opts.inputs ?? inputs, deps, {
          startedAt: start,
          loopDeadlineAt: start + (d - 5) * 1000,
          deadlineSeconds: d,
        }),
      );
    },
    kubeletStartsAfter: (afterMs) => {
      fake.onPodCreated = ({ ns, name, uid }) =>
        clock.schedule(afterMs, () => {
          const p = fake.pod(ns, name);
          if (p?.metadata.uid === uid) fake.start(ns, name);
        });
    },
    kubeletCrashesAtStart: (afterMs, o = {}) => {
      fake.onPodCreated = ({ ns, name, uid }) =>
        clock.schedule(afterMs, () => {
          if (fake.pod(ns, name)?.metadata.uid !== uid) return;
          fake.crashAtStart(ns, name, {
            exitCode: o.exitCode ?? 1,
            detectedAfterMs: o.detectedAfterMs ?? 1000,
            schedule: (ms, fn) => clock.schedule(ms, fn),
          });
        });
    },
  };
}
