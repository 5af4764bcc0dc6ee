/**
 * A real Kubernetes control plane for tests (spec/kubernetes.md §19.5, issue 4): etcd and kube-apiserver built from the
 * published Go modules by tools/k8s/build.sh, started on loopback with throw-away certificates, plus a simulated
 * kubelet that binds pods to a fake Node, writes `agent` container statuses on request and completes graceful
 * deletions the way a kubelet does. Every process started here is stopped by `stop()`.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions as HttpsRequestOptions } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1ContainerState,
  type V1Pod,
  Watch,
} from "@kubernetes/client-node";
import { repoRoot } from "../support/built.js";
import { PULL_TEXTS } from "../support/kubernetes/pull-texts.js";

export const BIN_DIR = join(repoRoot, "tools", "k8s", "bin");

export function controlPlaneBinaries(): { etcd: string; apiserver: string } {
  const etcd = join(BIN_DIR, "etcd");
  const apiserver = join(BIN_DIR, "kube-apiserver");
  if (!existsSync(etcd) || !existsSync(apiserver)) {
    throw new Error(
      `the Kubernetes test binaries are missing in ${BIN_DIR}: run tools/k8s/build.sh (bash scripts/test does this); this tier never skips in CI`,
    );
  }
  return { etcd, apiserver };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function openssl(cwd: string, args: string[]): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

function makeCertificates(pki: string): void {
  mkdirSync(pki, { recursive: true });
  openssl(pki, [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=berth-test-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
  ]);
  const issue = (name: string, subject: string, ext: string[]) => {
    openssl(pki, [
      "req",
      "-new",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      subject,
    ]);
    writeFileSync(
      join(pki, `${name}.ext`),
      `${["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment", ...ext].join("\n")}\n`,
    );
    openssl(pki, [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "2",
      "-extfile",
      `${name}.ext`,
    ]);
  };
  issue("serving", "/CN=kube-apiserver", [
    "extendedKeyUsage=serverAuth",
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,IP:10.0.0.1",
  ]);
  issue("admin", "/O=system:masters/CN=berth-admin", ["extendedKeyUsage=clientAuth"]);
  // A user with no groups: RBAC denies it everything until a test grants a Role (the 403 hint cases).
  issue("restricted", "/CN=berth-restricted", ["extendedKeyUsage=clientAuth"]);
  openssl(pki, ["genrsa", "-out", "sa.key", "2048"]);
  openssl(pki, ["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
}

function kubeconfigYaml(server: string, pki: string, user: "admin" | "restricted"): string {
  const b64 = (f: string) => readFileSync(join(pki, f)).toString("base64");
  return `apiVersion: v1
kind: Config
clusters:
- name: berth-test
  cluster:
    server: ${server}
    certificate-authority-data: ${b64("ca.crt")}
users:
- name: ${user}
  user:
    client-certificate-data: ${b64(`${user}.crt`)}
    client-key-data: ${b64(`${user}.key`)}
contexts:
- name: berth-test-${user}
  context:
    cluster: berth-test
    user: ${user}
    namespace: default
current-context: berth-test-${user}
`;
}

async function waitFor(
  what: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
  alive: () => boolean,
  log: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!alive()) throw new Error(`${what}: the process exited early; last log lines:\n${log()}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline)
      throw new Error(`${what} did not become ready within ${timeoutMs} ms; last log lines:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ControlPlane {
  readonly server: string;
  readonly dir: string;
  /** The throw-away PKI: ca.crt, serving.{crt,key} (valid for 127.0.0.1), admin.{crt,key}, restricted.{crt,key}. */
  readonly pkiDir: string;
  /** kubeconfig files on disk, for the provider binary and CLI (KUBECONFIG). */
  readonly kubeconfigPath: string;
  readonly restrictedKubeconfigPath: string;
  readonly admin: KubeConfig;
  readonly restricted: KubeConfig;
  readonly core: CoreV1Api;
  readonly rbac: RbacAuthorizationV1Api;
  readonly nodeName: string;
  readonly kubelet: KubeletSimulator;
  /** With `startControlPlane({ auditLog: true })`: the apiserver's own audit log (JSON lines, level Metadata), else null. */
  readonly auditLogPath: string | null;
  /** SIGKILL the apiserver (a transport failure mid-deploy); `restartApiserver` brings it back on the same port. */
  killApiserver(): Promise<void>;
  restartApiserver(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The ports are asked of the kernel, closed, then handed to etcd and kube-apiserver: something else (another test's
 * server, a client's source port) can take one in between. A control plane that could not bind is started again on
 * new ports.
 */
export async function startControlPlane(
  options: { nodeName?: string; auditLog?: boolean } = {},
): Promise<ControlPlane> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startControlPlaneOnce(options);
    } catch (error) {
      if (attempt >= 3 || !/address already in use/i.test(String(error))) throw error;
    }
  }
}

async function startControlPlaneOnce(options: { nodeName?: string; auditLog?: boolean }): Promise<ControlPlane> {
  const bins = controlPlaneBinaries();
  const dir = mkdtempSync(join(tmpdir(), "berth-cp-"));
  const pki = join(dir, "pki");
  makeCertificates(pki);
  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
  const children: ChildProcess[] = [];
  const logs = new Map<ChildProcess, string>();
  const start = (bin: string, args: string[]) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    logs.set(child, "");
    const keep = (d: Buffer) => logs.set(child, `${logs.get(child) ?? ""}${d.toString()}`.slice(-8000));
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    children.push(child);
    return child;
  };
  const alive = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;
  const tail = (c: ChildProcess) => (logs.get(c) ?? "").split("\n").slice(-20).join("\n");

  const etcdUrl = `http://127.0.0.1:${etcdClient}`;
  const etcd = start(bins.etcd, [
    "--name=berth-test",
    `--data-dir=${join(dir, "etcd")}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
    `--initial-cluster=berth-test=http://127.0.0.1:${etcdPeer}`,
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ]);
  const stopAll = async () => {
    for (const c of [...children].reverse()) {
      if (!alive(c)) continue;
      c.kill("SIGTERM");
      const exited = new Promise((r) => c.once("exit", r));
      const timer = setTimeout(() => c.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
  };
  try {
    await waitFor(
      "etcd",
      60_000,
      async () => (await fetch(`${etcdUrl}/health`)).ok,
      () => alive(etcd),
      () => tail(etcd),
    );
  } catch (error) {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const server = `https://127.0.0.1:${apiPort}`;
  const apiserverArgs = [
    `--etcd-servers=${etcdUrl}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${apiPort}`,
    `--cert-dir=${join(dir, "apiserver-certs")}`,
    `--tls-cert-file=${join(pki, "serving.crt")}`,
    `--tls-private-key-file=${join(pki, "serving.key")}`,
    `--client-ca-file=${join(pki, "ca.crt")}`,
    `--service-account-key-file=${join(pki, "sa.pub")}`,
    `--service-account-signing-key-file=${join(pki, "sa.key")}`,
    "--service-account-issuer=https://localhost",
    "--service-cluster-ip-range=10.0.0.0/24",
    "--authorization-mode=RBAC",
    "--disable-admission-plugins=ServiceAccount",
    "--allow-privileged=true",
  ];
  // Issue 36: every request the apiserver served, judged from the apiserver's side (a dry run must send no write).
  const auditLogPath = options.auditLog ? join(dir, "apiserver-audit.log") : null;
  if (auditLogPath !== null) {
    const policy = join(dir, "audit-policy.yaml");
    writeFileSync(
      policy,
      "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n",
    );
    apiserverArgs.push(
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${auditLogPath}`,
      "--audit-log-mode=blocking",
    );
  }
  const kubeconfigPath = join(dir, "admin.kubeconfig");
  const restrictedKubeconfigPath = join(dir, "restricted.kubeconfig");
  writeFileSync(kubeconfigPath, kubeconfigYaml(server, pki, "admin"), { mode: 0o600 });
  writeFileSync(restrictedKubeconfigPath, kubeconfigYaml(server, pki, "restricted"), { mode: 0o600 });
  const admin = new KubeConfig();
  admin.loadFromFile(kubeconfigPath);
  const restricted = new KubeConfig();
  restricted.loadFromFile(restrictedKubeconfigPath);
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);

  let apiserver = start(bins.apiserver, apiserverArgs);
  const awaitReady = async () => {
    await waitFor(
      "kube-apiserver /readyz",
      90_000,
      async () => {
        await core.readNamespace({ name: "default" });
        return true;
      },
      () => alive(apiserver),
      () => tail(apiserver),
    );
  };
  const nodeName = options.nodeName ?? "berth-sim-node";
  let kubelet: KubeletSimulator;
  try {
    await awaitReady();
    await core.createNode({
      body: {
        metadata: {
          name: nodeName,
          labels: { "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": nodeName },
        },
        status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "simulated" }] },
      },
    });
    kubelet = new KubeletSimulator(admin, nodeName);
    await kubelet.start();
  } catch (error) {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  return {
    server,
    dir,
    auditLogPath,
    pkiDir: pki,
    kubeconfigPath,
    restrictedKubeconfigPath,
    admin,
    restricted,
    core,
    rbac,
    nodeName,
    kubelet,
    async killApiserver() {
      const exited = new Promise((r) => apiserver.once("exit", r));
      apiserver.kill("SIGKILL");
      await exited;
    },
    async restartApiserver() {
      apiserver = start(bins.apiserver, apiserverArgs);
      await awaitReady();
      await kubelet.restartWatch();
    },
    async stop() {
      kubelet.stop();
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What the simulated kubelet should make the `agent` container report. */
export type SimulatedState =
  | { kind: "running" }
  | { kind: "terminated"; exitCode: number; reason?: string }
  | { kind: "waiting"; reason: string; message?: string };

/**
 * Registry messages per pull-failure class (spec/kubernetes.md §10.1) as the kubelet publishes them: containerd 1.6's
 * CRI error chain behind `rpc error: code = … desc =` (test/support/kubernetes/pull-texts.ts, shared with the fast
 * tier). `transient` is what the real node stack answers for a digest it does not hold (pulls go to a closed port).
 */
export const PULL_MESSAGES = {
  unauthorized: (image: string) => PULL_TEXTS.pullAccessDenied(image),
  "manifest-unknown": (image: string) => PULL_TEXTS.manifestUnknown(image),
  "arch-mismatch": (image: string) => PULL_TEXTS.archDockerd(image),
  transient: (image: string) =>
    PULL_TEXTS.refused(
      image,
      `http://127.0.0.1:1/v2/${repositoryOf(image)}/manifests/${image.split("@")[1] ?? ""}?ns=${image.split("/")[0] ?? ""}`,
    ),
  /** containerd's content store refusing a blob whose bytes do not match the digest it was asked for. */
  "commit-digest": (image: string) =>
    PULL_TEXTS.commitDigest(image, image.split("@")[1] ?? "", `sha256:${"4013".repeat(16)}`),
} as const;

/** containerd's architecture-mismatch text: the platform link precedes "not found", so it is arch-mismatch (issue 34). */
export const ARCH_MISMATCH_CONTAINERD = (image: string) => PULL_TEXTS.archContainerd(image);

/** `ghcr.io/block/buzz-sprig@sha256:…` → `block/buzz-sprig`. */
function repositoryOf(image: string): string {
  const name = image.split("@")[0] ?? "";
  return name.slice(name.indexOf("/") + 1);
}

/**
 * The kubelet stand-in. It schedules (binds) every pending pod to the fake Node, applies the state a test asked
 * for (or the default for new pods), and finishes graceful deletions of bound pods by deleting them with grace 0
 * and a uid precondition, as the real kubelet does once the container has stopped.
 */
/**
 * A minimal keep-alive JSON client for the simulator's hot path. client-node 1.x opens a fresh TLS connection per
 * request (tens of ms of RSA per call on a small machine), which made the simulator, not the apiserver or berth, the
 * bottleneck of the throughput benchmark.
 */
class RawApi {
  private agent: HttpsAgent | undefined;
  private readonly server: URL;

  constructor(private readonly kc: KubeConfig) {
    this.server = new URL(kc.getCurrentCluster()?.server ?? "https://127.0.0.1");
  }

  private async tls(): Promise<HttpsAgent> {
    if (!this.agent) {
      const o: HttpsRequestOptions = {};
      await this.kc.applyToHTTPSOptions(o);
      this.agent = new HttpsAgent({ ca: o.ca, cert: o.cert, key: o.key, keepAlive: true, maxSockets: 64 });
    }
    return this.agent;
  }

  /** Resolves with the parsed body on 2xx; rejects with an error carrying `code` (the HTTP status) otherwise. */
  async request<T>(method: string, path: string, body?: unknown, contentType = "application/json"): Promise<T> {
    const agent = await this.tls();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<T>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: this.server.hostname,
          port: this.server.port,
          method,
          path,
          agent,
          headers: {
            Accept: "application/json",
            ...(payload !== undefined
              ? { "Content-Type": contentType, "Content-Length": Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString();
            const code = res.statusCode ?? 0;
            if (code >= 200 && code < 300) resolve((text ? JSON.parse(text) : {}) as T);
            else
              reject(
                Object.assign(new Error(`${method} ${path}: HTTP ${code}: ${text.slice(0, 300)}`), {
                  code,
                  body: text,
                }),
              );
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent?.destroy();
  }
}

const podUrl = (namespace: string, name: string) =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;

/** The simulated node: what its scheduler stand-in checks a pod against. */
export interface SimulatedNode {
  /** Allocatable CPU in millicores and memory in bytes (a roomy default: many tests share one node per file). */
  cpuMilli: number;
  memoryBytes: number;
  labels: Record<string, string>;
  taints: Array<{ key: string; value?: string; effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" }>;
}

/** Kubernetes quantities as the scheduler reads them: `250m`, `1`, `0.5` CPU; `512Mi`, `2Gi`, `1G`, bytes. */
export function parseQuantity(q: string | undefined, kind: "cpu" | "memory"): number {
  if (!q) return 0;
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return 0;
  const n = Number(m[1]);
  const unit = m[2] ?? "";
  if (kind === "cpu") return unit === "m" ? n : n * 1000;
  const factors: Record<string, number> = {
    "": 1,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 1024,
    Mi: 1024 ** 2,
    Gi: 1024 ** 3,
    Ti: 1024 ** 4,
  };
  return n * (factors[unit] ?? 1);
}

const requestsOf = (pod: V1Pod) => {
  let cpu = 0;
  let memory = 0;
  for (const c of pod.spec?.containers ?? []) {
    cpu += parseQuantity(c.resources?.requests?.cpu, "cpu");
    memory += parseQuantity(c.resources?.requests?.memory, "memory");
  }
  return { cpu, memory };
};

const terminal = (pod: V1Pod) => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";

/**
 * The kubelet stand-in, taught the real kubelet's order of status writes (issue 34, research/real-kubelet.md), so the
 * fast tier cannot pass what a real node fails:
 * - **Scheduling** like kube-scheduler's filters for one node: requests against what the node has left, the pod's
 *   `nodeSelector` against the node's labels, the node's taints against the pod's tolerations. A pod that does not fit
 *   stays unbound and `Pending`, with `PodScheduled=False`, reason `Unschedulable` and the scheduler's message; it is
 *   tried again whenever a pod leaves the node.
 * - **Start order** for a bound pod given a state: `Pending` with the container waiting `ContainerCreating`, then the
 *   state. A container that exits at once is published `running` first and `terminated` only at the next relist
 *   (`relistMs`), and the pod's phase stays `Running` for a moment after the container terminated (the kubelet sets
 *   the terminal phase once the pod's sandbox is down), then turns `Failed`/`Succeeded`.
 * - **Status fields**: `image` is the tag, `imageID` the digest the pod names, a `containerID` per run.
 * - **Graceful deletion** of bound pods, completed with grace 0 and a uid precondition, as the real kubelet does.
 */
export class KubeletSimulator {
  private readonly api: RawApi;
  private abort: AbortController | undefined;
  private stopped = false;
  /** State given to each pod as soon as it is bound; undefined leaves it with no container status (pending). */
  defaultState: ((pod: V1Pod) => SimulatedState | undefined) | undefined = undefined;
  /** How long a graceful deletion takes before the kubelet removes the pod; tests lengthen it. */
  gracefulDeletionMs = 200;
  /** When false, marked pods stay marked until `finishDeletion` (a kubelet that is slow or gone). */
  completeDeletions = true;
  /** From the `ContainerCreating` write to the container's first state (sandbox, image present, container created). */
  startDelayMs = 100;
  /** The kubelet's relist period (PLEG): how long an exited container keeps reading `running`. */
  relistMs = 1000;
  /** How long the phase reads `Running` after the container terminated, before the terminal phase. */
  terminalPhaseDelayMs = 100;
  /** Called once a crash at start has been written as `terminated` (tests order their reads against it). */
  onCrashWritten: ((namespace: string, name: string) => void) | undefined = undefined;
  readonly node: SimulatedNode = { cpuMilli: 64_000, memoryBytes: 256 * 1024 ** 3, labels: {}, taints: [] };
  private readonly pendingDeletions = new Set<string>();
  private readonly bound = new Set<string>();
  /** Requests of the pods holding room on the node (bound, not terminal, not gone). */
  private readonly placed = new Map<string, { cpu: number; memory: number }>();
  /** Pods the scheduler stand-in could not place yet, retried when room frees up. */
  private readonly unscheduled = new Map<string, V1Pod>();
  private containerSeq = 0;

  constructor(
    private readonly kc: KubeConfig,
    readonly nodeName: string,
  ) {
    this.api = new RawApi(kc);
    this.node.labels = {
      "kubernetes.io/arch": "amd64",
      "kubernetes.io/os": "linux",
      "kubernetes.io/hostname": nodeName,
    };
  }

  async start(): Promise<void> {
    await this.restartWatch();
  }

  async restartWatch(): Promise<void> {
    this.abort?.abort();
    if (this.stopped) return;
    const watch = new Watch(this.kc);
    this.abort = await watch.watch(
      "/api/v1/pods",
      {},
      (phase: string, pod: V1Pod) => {
        if (phase === "DELETED") {
          this.forget(pod);
          return;
        }
        // A failed bind or status write shows up as the test's own timeout on the state it waited for.
        void this.onPod(pod).catch(() => undefined);
      },
      () => {
        // The watch ended (apiserver restart or timeout): re-establish unless stopped.
        if (!this.stopped) setTimeout(() => void this.restartWatch().catch(() => undefined), 200);
      },
    );
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.api.close();
  }

  private key(pod: V1Pod): string {
    return `${pod.metadata?.namespace}/${pod.metadata?.name}/${pod.metadata?.uid}`;
  }

  /** A pod left the node (gone or terminal): its room is free, so pods waiting for room are tried again. */
  private forget(pod: V1Pod): void {
    const key = this.key(pod);
    this.unscheduled.delete(key);
    if (this.placed.delete(key)) this.retryUnscheduled();
  }

  private retryUnscheduled(): void {
    for (const [key, pod] of [...this.unscheduled]) {
      this.unscheduled.delete(key);
      void this.schedule(pod).catch(() => undefined);
    }
  }

  private async onPod(pod: V1Pod): Promise<void> {
    const ns = pod.metadata?.namespace ?? "default";
    const name = pod.metadata?.name ?? "";
    const key = this.key(pod);
    if (terminal(pod)) this.forget(pod);
    if (pod.metadata?.deletionTimestamp) {
      if (pod.spec?.nodeName && this.completeDeletions && !this.pendingDeletions.has(key)) {
        this.pendingDeletions.add(key);
        setTimeout(
          () => void this.finishDeletion(ns, name, pod.metadata?.uid ?? "").catch(() => undefined),
          this.gracefulDeletionMs,
        );
      }
      return;
    }
    if (!pod.spec?.nodeName && !this.bound.has(key) && !this.unscheduled.has(key)) await this.schedule(pod);
  }

  /** Why the one node cannot take this pod, in kube-scheduler's words, or null when it fits. */
  private unfit(pod: V1Pod): string | null {
    const reasons: string[] = [];
    for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) {
      if (this.node.labels[k] !== v) {
        reasons.push("1 node(s) didn't match Pod's node affinity/selector");
        break;
      }
    }
    const untolerated = this.node.taints.find(
      (t) =>
        t.effect !== "PreferNoSchedule" &&
        !(pod.spec?.tolerations ?? []).some(
          (tol) =>
            (tol.operator === "Exists"
              ? tol.key === undefined || tol.key === t.key
              : tol.key === t.key && (tol.value ?? "") === (t.value ?? "")) &&
            (tol.effect === undefined || tol.effect === t.effect),
        ),
    );
    if (untolerated) reasons.push(`1 node(s) had untolerated taint {${untolerated.key}: ${untolerated.value ?? ""}}`);
    const want = requestsOf(pod);
    let cpu = 0;
    let memory = 0;
    for (const r of this.placed.values()) {
      cpu += r.cpu;
      memory += r.memory;
    }
    if (want.cpu > this.node.cpuMilli - cpu) reasons.push("1 Insufficient cpu");
    if (want.memory > this.node.memoryBytes - memory) reasons.push("1 Insufficient memory");
    if (reasons.length === 0) return null;
    const resourcesOnly = reasons.every((r) => r.startsWith("1 Insufficient"));
    const preemption = resourcesOnly
      ? "1 No preemption victims found for incoming pod"
      : "1 Preemption is not helpful for scheduling";
    return `0/1 nodes are available: ${reasons.join(", ")}. preemption: 0/1 nodes are available: ${preemption}.`;
  }

  private async schedule(pod: V1Pod): Promise<void> {
    const ns = pod.metadata?.namespace ?? "default";
    const name = pod.metadata?.name ?? "";
    const key = this.key(pod);
    const why = this.unfit(pod);
    if (why !== null) {
      this.unscheduled.set(key, pod);
      const now = new Date();
      await this.patchStatus(ns, name, {
        phase: "Pending",
        conditions: [
          { type: "PodScheduled", status: "False", reason: "Unschedulable", message: why, lastTransitionTime: now },
        ],
      });
      return;
    }
    this.bound.add(key);
    this.placed.set(key, requestsOf(pod));
    await this.api.request("POST", `${podUrl(ns, name)}/binding`, {
      apiVersion: "v1",
      kind: "Binding",
      metadata: { name },
      target: { apiVersion: "v1", kind: "Node", name: this.nodeName },
    });
    const state = this.defaultState?.(pod);
    if (state) await this.play(ns, name, state, pod);
  }

  /**
   * A newly bound pod's life in the real kubelet's order: `ContainerCreating` first, then the state; a container that
   * exits at once reads `running` until the next relist, then `terminated` with phase Running, then the terminal phase.
   */
  private async play(namespace: string, name: string, state: SimulatedState, pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    const same = async () =>
      (await this.api.request<V1Pod>("GET", podUrl(namespace, name)).catch(() => undefined))?.metadata?.uid === uid;
    const later = (ms: number) => new Promise((r) => setTimeout(r, ms));
    let current = await this.writeState(namespace, name, { kind: "waiting", reason: "ContainerCreating" }, pod);
    await later(this.startDelayMs);
    if (!(await same())) return;
    if (state.kind !== "terminated") {
      await this.writeState(namespace, name, state, current);
      return;
    }
    const run = this.newContainerId();
    current = await this.writeState(namespace, name, { kind: "running" }, current, run);
    await later(this.relistMs);
    if (!(await same())) return;
    await this.terminate(namespace, name, state, current, run);
    this.onCrashWritten?.(namespace, name);
  }

  /**
   * Sizes the node so that exactly `free` is left beside the pods already placed (a small node in a file whose earlier
   * tests left pods behind); `null` restores the roomy default.
   */
  setFreeRoom(free: { cpuMilli: number; memoryBytes: number } | null): void {
    if (free === null) {
      this.node.cpuMilli = 64_000;
      this.node.memoryBytes = 256 * 1024 ** 3;
      return;
    }
    let cpu = 0;
    let memory = 0;
    for (const r of this.placed.values()) {
      cpu += r.cpu;
      memory += r.memory;
    }
    this.node.cpuMilli = cpu + free.cpuMilli;
    this.node.memoryBytes = memory + free.memoryBytes;
  }

  private newContainerId(): string {
    this.containerSeq++;
    return `containerd://${this.containerSeq.toString(16).padStart(64, "0")}`;
  }

  /** Removes a gracefully deleted pod (grace 0, uid precondition), as a kubelet does after the container stops. */
  async finishDeletion(namespace: string, name: string, uid: string): Promise<void> {
    // With a body, the apiserver reads the delete options from the body and ignores the query parameters, so the
    // grace period must travel in the body next to the precondition.
    await this.api.request("DELETE", podUrl(namespace, name), {
      apiVersion: "v1",
      kind: "DeleteOptions",
      gracePeriodSeconds: 0,
      preconditions: { uid },
    });
  }

  /**
   * Writes the `agent` container's status (and the pod phase that goes with it) through the status subresource, as
   * a merge patch (no resourceVersion, so a concurrent status write cannot make it fail), and returns the pod. A
   * `terminated` state is written as the kubelet does it: the container terminated while the phase still reads
   * Running, then the terminal phase; the pod returned is the final one.
   */
  async setState(namespace: string, name: string, state: SimulatedState): Promise<V1Pod> {
    const pod = await this.api.request<V1Pod>("GET", podUrl(namespace, name));
    if (state.kind !== "terminated") return this.writeState(namespace, name, state, pod);
    const running = pod.status?.containerStatuses?.find((c) => c.name === "agent");
    return this.terminate(namespace, name, state, pod, running?.state?.running ? running.containerID : undefined);
  }

  private async terminate(
    namespace: string,
    name: string,
    state: SimulatedState & { kind: "terminated" },
    pod: V1Pod,
    containerId: string | undefined,
  ): Promise<V1Pod> {
    const exited = await this.writeState(namespace, name, state, pod, containerId, "Running");
    await new Promise((r) => setTimeout(r, this.terminalPhaseDelayMs));
    return this.patchStatus(namespace, name, { phase: state.exitCode === 0 ? "Succeeded" : "Failed" }).catch(
      () => exited,
    );
  }

  private patchStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<V1Pod> {
    return this.api.request<V1Pod>(
      "PATCH",
      `${podUrl(namespace, name)}/status`,
      { status },
      "application/merge-patch+json",
    );
  }

  private async writeState(
    namespace: string,
    name: string,
    state: SimulatedState,
    pod: V1Pod,
    containerId?: string,
    phaseOverride?: string,
  ): Promise<V1Pod> {
    const image =
      pod.spec?.containers?.find((c) => c.name === "agent")?.image ?? pod.spec?.containers?.[0]?.image ?? "";
    const repository = image.split("@")[0] ?? image;
    const now = new Date();
    let containerState: V1ContainerState;
    let phase: string;
    switch (state.kind) {
      case "running":
        containerState = { running: { startedAt: now } };
        phase = "Running";
        break;
      case "terminated":
        containerState = {
          terminated: {
            exitCode: state.exitCode,
            reason: state.reason ?? (state.exitCode === 0 ? "Completed" : "Error"),
            startedAt: now,
            finishedAt: now,
          },
        };
        phase = state.exitCode === 0 ? "Succeeded" : "Failed";
        break;
      case "waiting":
        containerState = { waiting: { reason: state.reason, ...(state.message ? { message: state.message } : {}) } };
        phase = "Pending";
        break;
    }
    const ran = state.kind !== "waiting";
    const status = {
      phase: phaseOverride ?? phase,
      hostIP: "127.0.0.1",
      podIP: "10.244.0.10",
      startTime: pod.status?.startTime ?? now,
      conditions: [{ type: "PodScheduled", status: "True", lastTransitionTime: now }],
      containerStatuses: [
        {
          name: "agent",
          // What a real kubelet reports: `image` as the tag, `imageID` as the digest the pod names.
          image: `${repository}:conformance`,
          imageID: ran ? image : "",
          ...(ran ? { containerID: containerId ?? this.newContainerId() } : {}),
          ready: state.kind === "running",
          started: state.kind === "running",
          restartCount: 0,
          state: containerState,
        },
      ],
    };
    return this.patchStatus(namespace, name, status);
  }
}
