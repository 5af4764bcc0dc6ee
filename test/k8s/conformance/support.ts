/**
 * Shared machinery of the real-apiserver conformance suite (spec/kubernetes.md §19.5): agent keys, deploy requests, the
 * provider executable as a real OS process, the audit chain it wrote, a programmable TLS proxy in front of the
 * apiserver (request log, holds, connection resets, `Date` shifts), and pods shaped by "another writer" (§14 built by
 * hand here, not by berth's manifest code, so a shape drift in berth shows up as a failure).
 *
 * What a test asserts goes through the documented protocol (the provider executable, the `berth k8s` verbs) and the
 * Kubernetes API only. The one exception is setup: `deployInProcess` runs the same converge loop in this process to
 * reach a starting state (a started agent) without paying for a provider process start-up per test.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import {
  createServer as createHttpsServer,
  Agent as HttpsAgent,
  type RequestOptions,
  request as httpsRequest,
} from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CoreV1Api, V1Pod, V1Secret } from "@kubernetes/client-node";
import { schnorr } from "@noble/curves/secp256k1.js";
import { bech32 } from "@scure/base";
import Database from "better-sqlite3";
import { openK8sChain } from "../../../src/kubernetes/audit.js";
import { realClock } from "../../../src/kit/clock.js";
import { connect } from "../../../src/kubernetes/connect.js";
import { silentLogger } from "../../../src/kit/log.js";
import { prepareDeploy } from "../../../src/kubernetes/prepare.js";
import { deploy } from "../../../src/kubernetes/converge.js";
import { DEFAULT_WAIT } from "../../../src/kubernetes/waiter.js";
import { berthBin, builtPath } from "../../support/built.js";
import { spawnNode, type Spawned } from "../../support/process.js";
import type { ControlPlane, SimulatedState } from "../control-plane.js";

// ---- agents and requests ----------------------------------------------------------------------------------------

export const IMAGE = `ghcr.io/block/buzz-sprig@sha256:${"17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"}`;
export const OWNER = "a".repeat(64);
export const DEADLINE_SECONDS = 30;

export const MANAGED_BY = "app.kubernetes.io/managed-by";
export const PUBKEY_LABEL = "buzz.block.xyz/agent-pubkey";
export const BINDING_LABEL = "buzz.block.xyz/binding-version";
export const PUBKEY_FULL = "buzz.block.xyz/agent-pubkey-full";
export const INTENT = "buzz.block.xyz/create-intent";

export interface TestAgent {
  readonly nsec: string;
  readonly pubkey: string;
  readonly podName: string;
  readonly selector: string;
}

/** A fresh random Nostr identity; the pubkey is derived here independently of berth's decoder. */
export function newAgent(): TestAgent {
  for (;;) {
    const secret = randomBytes(32);
    let pub: Uint8Array;
    try {
      pub = schnorr.getPublicKey(secret);
    } catch {
      continue; // 0 or ≥ n: vanishingly rare, draw again
    }
    const pubkey = Buffer.from(pub).toString("hex");
    return {
      nsec: bech32.encode("nsec", bech32.toWords(secret), 90),
      pubkey,
      podName: `buzz-agent-${pubkey.slice(0, 12)}`,
      selector: `${PUBKEY_LABEL}=${pubkey.slice(0, 32)},${MANAGED_BY}=buzz-backend-kubernetes`,
    };
  }
}

export function deployRequest(
  agent: TestAgent,
  namespace: string,
  config: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    op: "deploy",
    request_id: `conformance-${randomBytes(4).toString("hex")}`,
    agent: { relay_url: "wss://relay.example.org", private_key_nsec: agent.nsec, launch: { owner_pubkey: OWNER } },
    provider_config: { namespace, image: IMAGE, ...config },
  };
}

let nsCounter = 0;
/** A fresh namespace name per test (not created: the deploy's §12 step creates it unless the test does). */
export function freshNamespace(tag: string): string {
  nsCounter++;
  return `conf-${tag}-${process.pid.toString(36)}-${nsCounter}-${randomBytes(2).toString("hex")}`
    .slice(0, 63)
    .replace(/-+$/, "");
}

// ---- the provider executable ------------------------------------------------------------------------------------

export interface ProviderAnswer {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly answer: Record<string, unknown>;
  readonly ms: number;
  /** From the answer line reaching stdout to the process exiting (§3.1 step 6: explicit exit within 2 s). */
  readonly exitLagMs: number;
}

export interface ProviderOptions {
  readonly kubeconfig: string;
  /** BERTH_HOME: where the provider keeps its audit chain. */
  readonly home: string;
  readonly deadlineSeconds?: number;
  readonly env?: NodeJS.ProcessEnv;
  /** Extra node flags (a preload shifting the local clock). */
  readonly nodeArgs?: string[];
}

/** Starts `berth provider kubernetes` with one request on stdin; `answer()` parses its single stdout line. */
export function startProvider(
  request: unknown,
  o: ProviderOptions,
): { proc: Spawned; answer: () => Promise<ProviderAnswer> } {
  const started = Date.now();
  // BERTH_CONFORMANCE_ENTRY=buzz-backend runs the `buzz-backend-berth` bin alias instead (same protocol, §3.1).
  const entry =
    process.env.BERTH_CONFORMANCE_ENTRY === "buzz-backend"
      ? [builtPath("src/cli/entry/buzz-backend.js")]
      : [berthBin(), "provider", "kubernetes"];
  const proc = spawnNode([...(o.nodeArgs ?? []), ...entry], {
    input: `${JSON.stringify(request)}\n`,
    cwd: tmpdir(),
    env: {
      KUBECONFIG: o.kubeconfig,
      BERTH_HOME: o.home,
      HOME: o.home,
      BERTH_K8S_DEADLINE_SECONDS: String(o.deadlineSeconds ?? DEADLINE_SECONDS),
      ...o.env,
    },
  });
  let answeredAt = 0;
  proc.child.stdout?.on("data", (d: Buffer) => {
    if (answeredAt === 0 && d.includes(10)) answeredAt = Date.now();
  });
  return {
    proc,
    answer: async () => {
      const { code } = await proc.exited();
      const exitLagMs = answeredAt === 0 ? Number.NaN : Date.now() - answeredAt;
      const stdout = proc.output();
      const lines = stdout.split("\n").filter((l) => l.length > 0);
      let answer: Record<string, unknown> = {};
      try {
        answer = lines.length === 1 ? (JSON.parse(lines[0] as string) as Record<string, unknown>) : {};
      } catch {
        answer = {};
      }
      if (lines.length !== 1) answer = { __not_one_line: stdout.slice(0, 2000), __stderr: proc.errors().slice(-2000) };
      return { code, stdout, stderr: proc.errors(), answer, ms: Date.now() - started, exitLagMs };
    },
  };
}

export async function runProvider(request: unknown, o: ProviderOptions): Promise<ProviderAnswer> {
  return startProvider(request, o).answer();
}

/** Runs `berth <args>` (operator verbs) to completion. */
export async function runBerth(
  args: string[],
  o: { kubeconfig: string; home: string; env?: NodeJS.ProcessEnv; input?: string },
) {
  const proc = spawnNode([berthBin(), ...args], {
    cwd: tmpdir(),
    env: {
      KUBECONFIG: o.kubeconfig,
      BERTH_HOME: o.home,
      HOME: o.home,
      BERTH_K8S_DEADLINE_SECONDS: String(DEADLINE_SECONDS),
      ...o.env,
    },
    ...(o.input !== undefined ? { input: o.input } : {}),
  });
  const { code } = await proc.exited();
  return { code, stdout: proc.output(), stderr: proc.errors() };
}

const tempDirs: string[] = [];

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** Removes every home, kubeconfig and preload directory this file created (call from afterAll). */
export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function tempHome(tag: string): string {
  return tempDir(`berth-conf-${tag}-`);
}

/** A preload that runs the provider with a local clock `shiftMs` ahead (a fast laptop clock, §11 / R16). */
export function fastClockPreload(shiftMs: number): string[] {
  const dir = tempDir("berth-clock-");
  const file = join(dir, "fast-clock.mjs");
  writeFileSync(
    file,
    `const shift = ${shiftMs};
const RealDate = Date;
class ShiftedDate extends RealDate {
  constructor(...args) { if (args.length === 0) super(RealDate.now() + shift); else super(...args); }
  static now() { return RealDate.now() + shift; }
}
globalThis.Date = ShiftedDate;
`,
  );
  return ["--import", `file://${file}`];
}

// ---- the audit chain the provider wrote -------------------------------------------------------------------------

export interface AuditRecord {
  readonly seq: number;
  readonly kind: string;
  readonly payload: Record<string, unknown>;
}

function dbFiles(dir: string): string[] {
  const out: string[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...dbFiles(p));
    else if (/\.(db|sqlite|sqlite3)$/.test(e)) out.push(p);
  }
  return out;
}

/** Every `k8s.*` record in every SQLite chain under `home`, in chain order. */
export function auditRecords(home: string): AuditRecord[] {
  const records: AuditRecord[] = [];
  for (const file of dbFiles(home)) {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      const hasTable = db.prepare("SELECT name FROM sqlite_master WHERE type='table' AND name='audit_event'").get();
      if (!hasTable) continue;
      const rows = db
        .prepare("SELECT seq, kind, payload FROM audit_event WHERE kind LIKE 'k8s.%' ORDER BY chain_id, seq")
        .all() as Array<{
        seq: number;
        kind: string;
        payload: string;
      }>;
      for (const r of rows)
        records.push({ seq: r.seq, kind: r.kind, payload: JSON.parse(r.payload) as Record<string, unknown> });
    } finally {
      db.close();
    }
  }
  return records;
}

export function auditOf(home: string, kind: string, phase?: string): Array<Record<string, unknown>> {
  return auditRecords(home)
    .filter((r) => r.kind === kind && (phase === undefined || r.payload.phase === phase))
    .map((r) => r.payload);
}

// ---- waiting and reading ----------------------------------------------------------------------------------------

export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function readPod(core: CoreV1Api, namespace: string, name: string): Promise<V1Pod | undefined> {
  try {
    return await core.readNamespacedPod({ namespace, name });
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

export async function secretsIn(core: CoreV1Api, namespace: string): Promise<V1Secret[]> {
  return (await core.listNamespacedSecret({ namespace })).items;
}

export async function podsIn(core: CoreV1Api, namespace: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace })).items;
}

export async function ensureNamespace(core: CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } });
}

/** Per-namespace default container states for the shared simulated kubelet (one control plane per file). */
export class NamespaceStates {
  private readonly states = new Map<string, (pod: V1Pod) => SimulatedState | undefined>();
  constructor(cp: ControlPlane) {
    cp.kubelet.defaultState = (pod) => this.states.get(pod.metadata?.namespace ?? "")?.(pod);
  }
  get(namespace: string): ((pod: V1Pod) => SimulatedState | undefined) | undefined {
    return this.states.get(namespace);
  }
  set(namespace: string, state: SimulatedState | ((pod: V1Pod) => SimulatedState | undefined) | undefined): void {
    if (state === undefined) this.states.delete(namespace);
    else this.states.set(namespace, typeof state === "function" ? state : () => state);
  }
}

/** Waits until the pod exists and is bound (the simulated kubelet has seen it). */
export async function boundPod(core: CoreV1Api, namespace: string, name: string, timeoutMs = 20_000): Promise<V1Pod> {
  return until(
    `pod ${namespace}/${name} bound`,
    async () => {
      const p = await readPod(core, namespace, name);
      return p?.spec?.nodeName ? p : undefined;
    },
    timeoutMs,
  );
}

// ---- pods and Secrets written by "another writer" (§14 by hand) -------------------------------------------------

export function buzzLabels(agent: TestAgent, binding = "1"): Record<string, string> {
  return {
    [PUBKEY_LABEL]: agent.pubkey.slice(0, 32),
    [MANAGED_BY]: "buzz-backend-kubernetes",
    [BINDING_LABEL]: binding,
  };
}

/** A pod shaped exactly as §14.1 says, as Buzz's Rust provider would write it. */
export function buzzShapedPod(
  agent: TestAgent,
  opts: { generation: string; intent?: string; labels?: Record<string, string>; annotations?: Record<string, string> },
): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: agent.podName,
      labels: opts.labels ?? buzzLabels(agent),
      annotations: opts.annotations ?? {
        [PUBKEY_FULL]: agent.pubkey,
        [INTENT]: opts.intent ?? "0".repeat(64),
        "buzz.block.xyz/image": IMAGE,
      },
    },
    spec: {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 60,
      automountServiceAccountToken: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 10001,
        runAsGroup: 10001,
        fsGroup: 10001,
        seccompProfile: { type: "RuntimeDefault" },
      },
      containers: [
        {
          name: "agent",
          image: IMAGE,
          envFrom: [{ secretRef: { name: `${agent.podName}-${opts.generation}`, optional: false } }],
          resources: { requests: { cpu: "1", memory: "2Gi" }, limits: { cpu: "2", memory: "4Gi" } },
          volumeMounts: [{ name: "workspace", mountPath: "/home/agent" }],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        },
      ],
      volumes: [{ name: "workspace", emptyDir: {} }],
    },
  };
}

export function buzzShapedSecret(agent: TestAgent, generation: string, binding = "1"): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: `${agent.podName}-${generation}`,
      labels: buzzLabels(agent, binding),
      annotations: { [PUBKEY_FULL]: agent.pubkey },
    },
    immutable: true,
    stringData: {
      BUZZ_RELAY_URL: "wss://relay.example.org",
      BUZZ_PRIVATE_KEY: agent.nsec,
      NOSTR_PRIVATE_KEY: agent.nsec,
      BUZZ_MANAGED_AGENT_START_NONCE: generation,
    },
  };
}

export const generation = () => randomBytes(4).toString("hex");

// ---- a programmable TLS proxy in front of the apiserver ---------------------------------------------------------

export interface ProxiedRequest {
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly body: string;
  status?: number;
  /** The response body (mutations and reads; never kept for watches). */
  response?: string;
}

/** What a hook decides for one request: forward it (optionally after side effects), reset the connection, or answer. */
export type HookVerdict = "forward" | "reset" | { readonly status: number; readonly body: Record<string, unknown> };
export type ProxyHook = (req: ProxiedRequest) => Promise<HookVerdict> | HookVerdict;

export interface ApiProxy {
  readonly url: string;
  readonly kubeconfigPath: string;
  readonly requests: ProxiedRequest[];
  /** TLS connections the provider opened to the proxy so far. */
  connections(): number;
  hook: ProxyHook | undefined;
  /** Added to the apiserver's `Date` response header (the server clock the GC sees); null strips the header. */
  dateShiftMs: number | null;
  close(): Promise<void>;
}

/**
 * Terminates TLS with the apiserver's own serving certificate and forwards every request upstream with the chosen
 * user's client certificate. Streams (watches) are piped through untouched. A `reset` destroys the client socket
 * without a response: the provider sees a connection reset, never an API verdict.
 */
export async function startApiProxy(cp: ControlPlane, user: "admin" | "restricted" = "admin"): Promise<ApiProxy> {
  const pki = (f: string) => readFileSync(join(cp.pkiDir, f));
  const upstream = new URL(cp.server);
  const agent = new HttpsAgent({
    keepAlive: true,
    maxSockets: 64,
    ca: pki("ca.crt"),
    cert: pki(`${user}.crt`),
    key: pki(`${user}.key`),
  });
  const sockets = new Set<Socket>();
  const requests: ProxiedRequest[] = [];
  const state: { hook: ProxyHook | undefined; dateShiftMs: number | null } = { hook: undefined, dateShiftMs: 0 };
  const server = createHttpsServer({ key: pki("serving.key"), cert: pki("serving.crt") }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const entry: ProxiedRequest = {
        at: Date.now(),
        method: req.method ?? "GET",
        path: req.url ?? "/",
        body: body.toString(),
      };
      requests.push(entry);
      void (async () => {
        const verdict = state.hook ? await state.hook(entry) : "forward";
        if (verdict === "reset") {
          req.socket.destroy();
          return;
        }
        if (verdict !== "forward") {
          entry.status = verdict.status;
          res.writeHead(verdict.status, { "content-type": "application/json" });
          res.end(JSON.stringify(verdict.body));
          return;
        }
        const headers = { ...req.headers, host: upstream.host };
        const options: RequestOptions = {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers,
          agent,
        };
        const up = httpsRequest(options, (upRes: IncomingMessage) => {
          entry.status = upRes.statusCode;
          const out = { ...upRes.headers };
          if (state.dateShiftMs === null) delete out.date;
          else if (out.date && state.dateShiftMs !== 0)
            out.date = new Date(Date.parse(out.date) + state.dateShiftMs).toUTCString();
          res.writeHead(upRes.statusCode ?? 502, out);
          // Send the headers now, as the apiserver does: a watch client waits for them before the first event.
          res.flushHeaders();
          // Registered before the pipe: the response is kept before the client can have all of it (a hook may then
          // decide on what an earlier read answered).
          if (entry.method !== "GET" || !entry.path.includes("watch=")) {
            const parts: Buffer[] = [];
            upRes.on("data", (c: Buffer) => parts.push(c));
            upRes.on("end", () => {
              entry.response = Buffer.concat(parts).toString();
            });
          }
          upRes.pipe(res);
        });
        up.on("error", () => req.socket.destroy());
        res.on("close", () => up.destroy());
        up.end(body);
      })().catch(() => req.socket.destroy());
    });
  });
  let accepted = 0;
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  // Counted once the handshake completes: the provider's HTTP/2 attempt, which this HTTP/1.1-only proxy refuses in
  // ALPN (watch-stream.ts), opens no TLS connection.
  server.on("secureConnection", () => {
    accepted++;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = tempDir("berth-proxy-");
  const kubeconfigPath = join(dir, "proxy.kubeconfig");
  const source = user === "admin" ? cp.kubeconfigPath : cp.restrictedKubeconfigPath;
  writeFileSync(kubeconfigPath, readFileSync(source, "utf8").replace(`server: ${cp.server}`, `server: ${url}`), {
    mode: 0o600,
  });
  return {
    url,
    kubeconfigPath,
    requests,
    connections: () => accepted,
    get hook() {
      return state.hook;
    },
    set hook(h) {
      state.hook = h;
    },
    get dateShiftMs() {
      return state.dateShiftMs;
    },
    set dateShiftMs(v) {
      state.dateShiftMs = v;
    },
    async close() {
      for (const s of sockets) s.destroy();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `/api/v1/namespaces/<ns>/pods/<name>` and friends, for matching proxied requests. */
export function podPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${namespace}/pods${name ? `/${name}` : ""}`;
}

export function secretPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${namespace}/secrets${name ? `/${name}` : ""}`;
}

/** A deferred: lets a hook hold a request until the test releases it. */
export function gate(): { wait: Promise<void>; open: () => void; reached: Promise<void>; arrive: () => void } {
  let open = () => {};
  let arrive = () => {};
  const wait = new Promise<void>((r) => {
    open = r;
  });
  const reached = new Promise<void>((r) => {
    arrive = r;
  });
  return { wait, open, reached, arrive };
}

export function expectedPullMessage(
  kind: "unauthorized" | "manifest-unknown" | "arch-mismatch",
  image = IMAGE,
): string {
  const registry = image.split("/")[0];
  switch (kind) {
    case "unauthorized":
      return `the cluster is not authorized to pull ${image} from ${registry}. This pull retries indefinitely and will not succeed on its own: grant the cluster's nodes access to that registry.`;
    case "manifest-unknown":
      return `${registry} has no image at ${image}. Check the digest and repository.`;
    case "arch-mismatch":
      return `${image} has no variant for the architecture of the nodes it was scheduled on.`;
  }
}

export const K4 = (pod: string, condition: string) =>
  `${pod} was created by this deploy and did not stay running: ${condition}. Not retrying in this call — an immediate exit recurs until its cause is fixed. Check the agent's configuration and press Start to try again.`;
export const K5 = (pod: string) =>
  `a pod named ${pod} already exists in this namespace but is not managed by this provider for this agent (it lacks the management marker or carries a different agent identity). Remove it, or deploy this agent to a different namespace.`;
export const G2 = (ns: string) =>
  `not authorized to create namespace ${ns}. Ask a cluster administrator to run \`kubectl create namespace ${ns}\`, then try again.`;

// ---- one control plane per file, one scenario (namespace, home, proxy, agent) per test ---------------------------

export interface Scenario {
  readonly ns: string;
  readonly home: string;
  readonly proxy: ApiProxy;
  readonly agent: TestAgent;
  /** Requests the proxy saw from index `from` on. */
  requestsSince(from: number): ProxiedRequest[];
  deploy(config?: Record<string, unknown>, o?: Partial<ProviderOptions>): Promise<ProviderAnswer>;
  startDeploy(
    config?: Record<string, unknown>,
    o?: Partial<ProviderOptions>,
  ): { proc: Spawned; answer: () => Promise<ProviderAnswer> };
}

export async function newScenario(cp: ControlPlane, tag: string, opened: ApiProxy[]): Promise<Scenario> {
  const ns = freshNamespace(tag);
  const home = tempHome(tag);
  const proxy = await startApiProxy(cp);
  opened.push(proxy);
  const agent = newAgent();
  const options = (o?: Partial<ProviderOptions>): ProviderOptions => ({ kubeconfig: proxy.kubeconfigPath, home, ...o });
  return {
    ns,
    home,
    proxy,
    agent,
    requestsSince: (from) => proxy.requests.slice(from),
    deploy: (config, o) => runProvider(deployRequest(agent, ns, config), options(o)),
    startDeploy: (config, o) => startProvider(deployRequest(agent, ns, config), options(o)),
  };
}

export const isMutation = (r: ProxiedRequest) => r.method !== "GET";
export const isPodCreate = (ns: string) => (r: ProxiedRequest) =>
  r.method === "POST" && r.path.split("?")[0] === podPath(ns);
export const isSecretCreate = (ns: string) => (r: ProxiedRequest) =>
  r.method === "POST" && r.path.split("?")[0] === secretPath(ns);
export const isPodDelete = (ns: string, name: string) => (r: ProxiedRequest) =>
  r.method === "DELETE" && r.path.split("?")[0] === podPath(ns, name);
export const isPodGet = (ns: string, name: string) => (r: ProxiedRequest) =>
  r.method === "GET" && r.path.split("?")[0] === podPath(ns, name);
export const isPodList = (ns: string) => (r: ProxiedRequest) =>
  r.method === "GET" && r.path.split("?")[0] === podPath(ns) && !r.path.includes("watch=");

/** The numeric etcd revision behind a resourceVersion (opaque to clients, ordered in this test cluster). */
export const revision = (rv: string | undefined): number => Number(rv ?? Number.NaN);

/**
 * Setup only: one deploy call by the real converge loop in this process (CLI mode), through the scenario's proxy
 * and into the scenario's audit chain, with the provider's deadline.
 */
export async function deployInProcess(
  s: Scenario,
  config: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const prepared = prepareDeploy(deployRequest(s.agent, s.ns, config), { requireCommand: false });
  if (!prepared.ok) throw new Error(prepared.error);
  process.env.KUBECONFIG = s.proxy.kubeconfigPath;
  const c = await connect(null);
  if (!c.ok) throw new Error(c.error);
  const audit = openK8sChain(s.home);
  try {
    const start = realClock.now();
    const report = await deploy(
      prepared.value.inputs,
      {
        cluster: c.value,
        clock: realClock,
        audit,
        log: silentLogger,
        random32: () => randomBytes(4).readUInt32BE(0),
        wait: DEFAULT_WAIT,
        mode: "cli",
        version: "conformance",
      },
      { startedAt: start, loopDeadlineAt: start + (DEADLINE_SECONDS - 5) * 1000, deadlineSeconds: DEADLINE_SECONDS },
    );
    return report.answer.ok ? { ok: true, agent_id: report.answer.agentId } : { ok: false, error: report.answer.error };
  } finally {
    c.value.close();
    await audit.close();
  }
}

/** Deploys once (in process) with the container started at once, and returns the live (started) pod. */
export async function startedAgent(cp: ControlPlane, states: NamespaceStates, s: Scenario): Promise<V1Pod> {
  states.set(s.ns, { kind: "running" });
  const first = await deployInProcess(s);
  if (first.ok !== true) throw new Error(`setup deploy failed: ${JSON.stringify(first)}`);
  const pod = await readPod(cp.core, s.ns, s.agent.podName);
  if (!pod?.status?.containerStatuses?.[0]?.state?.running) throw new Error("setup deploy left no started pod");
  return pod;
}

/** Waits until a running deploy has read the pod at least `n` times after its preflight LIST (it is in the loop). */
export async function observedAtLeast(s: Scenario, from: number, n: number, timeoutMs = 20_000): Promise<void> {
  await until(
    `${n} observations of ${s.agent.podName}`,
    () => {
      const reqs = s.requestsSince(from);
      const listAt = reqs.findIndex(isPodList(s.ns));
      if (listAt < 0) return undefined;
      return reqs.slice(listAt).filter(isPodGet(s.ns, s.agent.podName)).length >= n ? true : undefined;
    },
    timeoutMs,
  );
}

export const preconditionsOf = (r: ProxiedRequest | undefined): unknown =>
  (JSON.parse(r?.body || "{}") as { preconditions?: unknown }).preconditions;
export const createdName = (r: ProxiedRequest | undefined): string | undefined =>
  (JSON.parse(r?.response || "{}") as { metadata?: { name?: string } }).metadata?.name;

/** §3.1 step 5, §10.4, §17: the agent's secret key never reaches stdout, stderr or the audit chain. */
export function secretLeaks(agent: TestAgent, home: string, outputs: string[]): string[] {
  const secretHex = Buffer.from(
    bech32.fromWords(bech32.decode(agent.nsec as `${string}1${string}`, 90).words),
  ).toString("hex");
  const audit = JSON.stringify(auditRecords(home));
  return [...outputs, audit].filter((text) => text.includes(agent.nsec) || text.includes(secretHex));
}
