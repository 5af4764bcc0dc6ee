/**
 * Deploy throughput against a real kube-apiserver + etcd (issue 4): 200 fresh agents deployed by the real reconcile
 * loop over the real HTTP cluster adapter, with bounded concurrency, while the simulated kubelet binds every pod and
 * starts its container at once. Reported: deploys/s, berth's API requests per deploy (watch connections included),
 * p50/p99 deploy latency; then the same 200 agents again (all started: the one-GET fast path). Target ≥ 50 deploys/s.
 *
 * Each deploy gets its own connection (one HttpCluster, as one provider process would) and an in-memory audit, so
 * the figure is the loop plus the apiserver, not process start-up or SQLite. The kubelet simulator shares this
 * process's event loop and adds its own bind + status writes per pod; both run on the same cores as the apiserver.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { MemoryAudit } from "../../src/kubernetes/audit.js";
import { realClock } from "../../src/kubernetes/clock.js";
import { connect } from "../../src/kubernetes/connect.js";
import { silentLogger } from "../../src/kubernetes/log.js";
import { prepareDeploy } from "../../src/kubernetes/prepare.js";
import { type DeployInputs, type DeployReport, deploy } from "../../src/kubernetes/reconcile.js";
import { DEFAULT_WAIT } from "../../src/kubernetes/waiter.js";
import { startControlPlane } from "../../test/k8s/control-plane.js";
import { deployRequest, newAgent } from "../../test/k8s/conformance/support.js";

const AGENTS = Number(process.env.BENCH_AGENTS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const NAMESPACE = "bench-real";
const DEADLINE_S = 120;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};

let baselinePerSecond = Number.NaN;
const cp = await startControlPlane();
try {
  process.env.KUBECONFIG = cp.kubeconfigPath;
  cp.kubelet.defaultState = (pod) => (pod.metadata?.namespace === NAMESPACE ? { kind: "running" } : undefined);
  await cp.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });

  const inputs: DeployInputs[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const prepared = prepareDeploy(deployRequest(newAgent(), NAMESPACE), { requireCommand: false });
    if (!prepared.ok) throw new Error(prepared.error);
    inputs.push(prepared.inputs);
  }

  // BENCH_SHARED=1: one connection for every deploy (a long-lived controller) instead of one per deploy.
  const shared = process.env.BENCH_SHARED === "1" ? await connect(null) : undefined;
  async function one(input: DeployInputs): Promise<DeployReport & { wallMs: number }> {
    const start = realClock.now();
    const c = shared ?? (await connect(null));
    if (!c.ok) throw new Error(c.error);
    try {
      const report = await deploy(
        input,
        {
          cluster: c.cluster,
          clock: realClock,
          audit: new MemoryAudit(),
          log: silentLogger,
          random32: () => randomBytes(4).readUInt32BE(0),
          wait: DEFAULT_WAIT,
          mode: "cli",
          version: "bench",
        },
        { startedAt: start, loopDeadlineAt: start + (DEADLINE_S - 5) * 1000, deadlineSeconds: DEADLINE_S },
      );
      return { ...report, wallMs: realClock.now() - start };
    } finally {
      if (!shared) c.cluster.close();
    }
  }

  async function pass(label: string): Promise<void> {
    const reports: Array<DeployReport & { wallMs: number }> = [];
    let next = 0;
    const requestsBefore = shared?.ok ? shared.cluster.requestCount : 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (;;) {
          const i = next++;
          if (i >= inputs.length) return;
          reports.push(await one(inputs[i] as DeployInputs));
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const failed = reports.filter((r) => !r.answer.ok);
    const latencies = reports.map((r) => r.wallMs);
    // With a shared connection the per-report diff overlaps between concurrent deploys; count the total instead.
    const requests = shared?.ok ? shared.cluster.requestCount - requestsBefore : reports.reduce((n, r) => n + r.requests, 0);
    console.log(`${label}: ${AGENTS} agents, concurrency ${CONCURRENCY}`);
    console.log(`  ${"deploys/s".padEnd(48)} ${(AGENTS / seconds).toFixed(1).padStart(10)}`);
    console.log(`  ${"API requests per deploy (berth's, watches incl.)".padEnd(48)} ${(requests / reports.length).toFixed(2).padStart(10)}`);
    console.log(`  ${"deploy latency p50".padEnd(48)} ${pct(latencies, 50).toFixed(1).padStart(10)} ms`);
    console.log(`  ${"deploy latency p99".padEnd(48)} ${pct(latencies, 99).toFixed(1).padStart(10)} ms`);
    console.log(`  ${"failed deploys".padEnd(48)} ${String(failed.length).padStart(10)}${failed[0] && !failed[0].answer.ok ? `  (first: ${failed[0].answer.error})` : ""}`);
    if (label.startsWith("create")) {
      console.log(`  ${"berth deploys / baseline creates".padEnd(48)} ${((AGENTS / seconds / baselinePerSecond) * 100).toFixed(1).padStart(9)}%`);
      const verdict = AGENTS / seconds >= 50 ? "met" : "NOT met";
      console.log(`  ${"target: ≥ 50 deploys/s".padEnd(48)} ${verdict.padStart(10)}`);
    }
  }

  // Baseline in the same run: the apiserver's own ceiling for the two writes every create needs (Secret POST, Pod
  // POST) over one keep-alive connection, with the simulator binding and starting each pod as in the berth pass.
  const pki = (f: string) => readFileSync(join(cp.pkiDir, f));
  const raw = new HttpsAgent({ keepAlive: true, maxSockets: 64, ca: pki("ca.crt"), cert: pki("admin.crt"), key: pki("admin.key") });
  const server = new URL(cp.server);
  const post = (path: string, body: unknown) =>
    new Promise<number>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = httpsRequest({ host: server.hostname, port: server.port, method: "POST", path, agent: raw, headers: { "Content-Type": "application/json" } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      req.end(payload);
    });
  const BASE_NS = "bench-baseline";
  cp.kubelet.defaultState = (pod) => (pod.metadata?.namespace === NAMESPACE || pod.metadata?.namespace === BASE_NS ? { kind: "running" } : undefined);
  await cp.core.createNamespace({ body: { metadata: { name: BASE_NS } } });
  {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (;;) {
          const i = next++;
          if (i >= AGENTS) return;
          await post(`/api/v1/namespaces/${BASE_NS}/secrets`, { metadata: { name: `s${i}` }, immutable: true, stringData: { A: "b" } });
          await post(`/api/v1/namespaces/${BASE_NS}/pods`, { metadata: { name: `p${i}` }, spec: { containers: [{ name: "agent", image: inputs[0]?.config.image }] } });
        }
      }),
    );
    baselinePerSecond = AGENTS / ((performance.now() - t0) / 1000);
    console.log(`baseline: raw Secret POST + Pod POST per agent, ${AGENTS} agents, concurrency ${CONCURRENCY}`);
    console.log(`  ${"creates/s (the apiserver's ceiling here)".padEnd(48)} ${baselinePerSecond.toFixed(1).padStart(10)}`);
    raw.destroy();
  }

  await pass("create path (absent → Secret → Pod → started)");
  const pods = (await cp.core.listNamespacedPod({ namespace: NAMESPACE })).items;
  console.log(`  ${"pods in the namespace afterwards".padEnd(48)} ${String(pods.length).padStart(10)}`);
  await pass("no-op path (all started: one quorum GET)");
  if (shared?.ok) shared.cluster.close();
} finally {
  await cp.stop();
}
