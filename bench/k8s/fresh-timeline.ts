/**
 * Where a fresh deploy's time goes (issue 19): fresh deploys of berth's real converge loop against a real
 * kube-apiserver + etcd (the simulated kubelet binds and starts every pod), at the same concurrency as
 * real-apiserver.ts, with every `Cluster` call timed. Prints, per step of the fresh path, the median and p90 of its
 * start (ms since the deploy began) and of its latency, the median gap between the pod create's answer and the
 * first watch wake, and between that and the deploy's answer. A diagnostic, not a ratio: its figures explain
 * real-apiserver.ts's.
 */
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { MemoryAudit } from "../../src/kubernetes/audit.js";
import { realClock } from "../../src/kit/clock.js";
import type { Cluster, WatchHandlers } from "../../src/kubernetes/cluster.js";
import { closePooledClusters } from "../../src/kubernetes/cluster-pool.js";
import { connect } from "../../src/kubernetes/connect.js";
import { silentLogger } from "../../src/kit/log.js";
import { prepareDeploy } from "../../src/kubernetes/prepare.js";
import { deploy } from "../../src/kubernetes/converge.js";
import { DEFAULT_WAIT } from "../../src/kubernetes/waiter.js";
import { startControlPlane } from "../../test/k8s/control-plane.js";
import { deployRequest, newAgent } from "../../test/k8s/conformance/support.js";

const AGENTS = Number(process.env.BENCH_AGENTS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);

interface Event {
  readonly op: string;
  readonly start: number;
  readonly end: number;
}

/** Times every promise-returning call and the watch's establishment and wakes, relative to `t0`. */
function timed(inner: Cluster, t0: number, events: Event[]): Cluster {
  const at = () => performance.now() - t0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function") return v;
      if (prop === "watchPod") {
        return (ns: string, name: string, rv: string | undefined, h: WatchHandlers) => {
          const start = at();
          return (v as Cluster["watchPod"]).call(target, ns, name, rv, {
            ...h,
            onEstablished: () => {
              events.push({ op: "watch established", start, end: at() });
              h.onEstablished();
            },
            onWake: (s) => {
              events.push({ op: "watch wake", start: at(), end: at() });
              h.onWake(s);
            },
          });
        };
      }
      return (...args: unknown[]) => {
        const start = at();
        const r = (v as (...a: unknown[]) => unknown).apply(target, args);
        if (!(r instanceof Promise)) return r;
        return r.then((x: unknown) => {
          events.push({ op: String(prop), start, end: at() });
          return x;
        });
      };
    },
  });
}

const cp = await startControlPlane();
try {
  process.env.KUBECONFIG = cp.kubeconfigPath;
  const ns = "bench-timeline";
  cp.kubelet.defaultState = (pod) => (pod.metadata?.namespace === ns ? { kind: "running" } : undefined);
  await cp.core.createNamespace({ body: { metadata: { name: ns } } });
  const all: { events: Event[]; total: number }[] = [];
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (;;) {
        const i = next++;
        if (i >= AGENTS) return;
        const prepared = prepareDeploy(deployRequest(newAgent(), ns), { requireCommand: false });
        if (!prepared.ok) throw new Error(prepared.error);
        const start = realClock.now();
        const t0 = performance.now();
        const c = await connect(null);
        if (!c.ok) throw new Error(c.error);
        const events: Event[] = [];
        const r = await deploy(
          prepared.value.inputs,
          {
            cluster: timed(c.value, t0, events),
            clock: realClock,
            audit: new MemoryAudit(),
            log: silentLogger,
            random32: () => randomBytes(4).readUInt32BE(0),
            wait: DEFAULT_WAIT,
            mode: "cli",
            version: "bench",
          },
          { startedAt: start, loopDeadlineAt: start + 115_000, deadlineSeconds: 120 },
        );
        c.value.close();
        if (!r.answer.ok) throw new Error(r.answer.error);
        all.push({ events, total: performance.now() - t0 });
      }
    }),
  );
  const seconds = (performance.now() - t) / 1000;
  const q = (xs: number[], p: number) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN;
  const f = (x: number) => x.toFixed(1).padStart(7);
  console.log(
    `fresh deploy timeline: ${AGENTS} agents, concurrency ${CONCURRENCY}, ${(AGENTS / seconds).toFixed(1)} deploys/s, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  console.log(
    `  ${"step (nth occurrence)".padEnd(28)} ${"count".padStart(5)} ${"start p50".padStart(9)} ${"start p90".padStart(9)} ${"lat p50".padStart(7)} ${"lat p90".padStart(7)}`,
  );
  const keys = new Map<string, { starts: number[]; lats: number[] }>();
  for (const d of all) {
    const seen = new Map<string, number>();
    for (const e of [...d.events].sort((a, b) => a.start - b.start)) {
      const n = (seen.get(e.op) ?? 0) + 1;
      seen.set(e.op, n);
      const k = `${e.op} #${n}`;
      const row = keys.get(k) ?? { starts: [], lats: [] };
      row.starts.push(e.start);
      row.lats.push(e.end - e.start);
      keys.set(k, row);
    }
  }
  for (const [k, row] of [...keys].sort((a, b) => q(a[1].starts, 0.5) - q(b[1].starts, 0.5))) {
    console.log(
      `  ${k.padEnd(28)} ${String(row.starts.length).padStart(5)} ${f(q(row.starts, 0.5))}   ${f(q(row.starts, 0.9))}   ${f(q(row.lats, 0.5))} ${f(q(row.lats, 0.9))}`,
    );
  }
  const totals = all.map((d) => d.total);
  console.log(
    `  ${"deploy answered".padEnd(28)} ${String(totals.length).padStart(5)} ${f(q(totals, 0.5))}   ${f(q(totals, 0.9))}`,
  );
} finally {
  closePooledClusters();
  await cp.stop();
}
