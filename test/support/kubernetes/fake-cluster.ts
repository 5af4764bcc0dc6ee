/**
 * An in-process apiserver that follows the documented semantics berth depends on (spec/kubernetes.md §19.4):
 * - every write bumps a global resourceVersion, the deletion mark included;
 * - DELETE with preconditions answers 409 `Conflict` when uid or resourceVersion differ; a missing object 404 `NotFound`;
 * - CREATE on a taken name answers 409 `AlreadyExists`; in a missing namespace 404 `NotFound`;
 * - a pod bound to a node is deleted gracefully (deletionTimestamp set, phase unchanged, removed by the simulated
 *   kubelet after the grace period); an unbound or terminal pod is removed at once;
 * - label selectors filter LISTs; the `Date` header comes from the injected clock.
 * A simulated kubelet binds pods and writes `agent` container states on request. Every call is logged in order and
 * faults can be injected per call, so each loop path can be driven deterministically.
 */
import { type ApiError, describeApiError } from "../../../src/core/kubernetes/api-status.js";
import type { DeleteAuthority } from "../../../src/core/kubernetes/authority.js";
import {
  ClaimSchema,
  type ClaimObject,
  type PodObject,
  PodSchema,
  type SecretMeta,
} from "../../../src/core/kubernetes/objects.js";
import { fromQuorumRead, type QuorumPod } from "../../../src/core/kubernetes/quorum.js";
import type { Fence } from "../../../src/core/kubernetes/verify.js";
import type {
  Cluster,
  CreateResult,
  DeleteResult,
  ListResult,
  LogResult,
  ObjectPrecondition,
  ReadResult,
  RequestOptions,
  WatchHandle,
  WatchHandlers,
} from "../../../src/kubernetes/cluster.js";
import type { Clock } from "../../../src/kit/clock.js";

export type FakeOp =
  | "getNamespace"
  | "createNamespace"
  | "getPod"
  | "listPods"
  | "createPod"
  | "deletePod"
  | "getSecret"
  | "listSecrets"
  | "createSecret"
  | "deleteSecret"
  | "getClaim"
  | "createClaim"
  | "watchPod"
  | "readLog";

export interface FakeCall {
  readonly op: FakeOp;
  readonly ns: string | null;
  readonly name: string | null;
  /** The verdict, e.g. `found`, `created`, `accepted`, `Conflict`, `transport`. */
  outcome: string;
  readonly authority?: string;
  readonly at: number;
}

/** A fault answers the call instead of the apiserver: a Status (`{code, reason}`) or a transport failure. */
export type Fault = { readonly code: number; readonly reason: string; readonly message?: string } | "transport";
export type FaultRule = (call: { op: FakeOp; ns: string | null; name: string | null }) => Fault | undefined;

type Stored = {
  metadata: Record<string, unknown> & { name: string; uid: string; resourceVersion: string };
  [k: string]: unknown;
};

interface Watcher {
  readonly ns: string;
  readonly name: string;
  readonly handlers: WatchHandlers;
  closed: boolean;
}

const clone = <T>(v: T): T => structuredClone(v);

export interface FakeClusterOptions {
  /** Time the simulated kubelet takes to finish a graceful deletion (virtual ms). Default 3000. */
  readonly gracefulDeletionMs?: number;
  /** `none` strips the Date header; a number shifts it (a proxy with a skewed clock). */
  readonly serverDate?: "clock" | "none" | number;
  /** Watch answers 403 (watch forbidden: the loop must fall back to polling). */
  readonly watchForbidden?: boolean;
  /** A watch's server-side timeout in virtual ms (timeoutSeconds). Default 60 000. */
  readonly watchTimeoutMs?: number;
}

export class FakeCluster implements Cluster {
  readonly identity = { context: "fake", server: "fake.invalid" };
  readonly calls: FakeCall[] = [];
  readonly faults: FaultRule[] = [];
  /** Runs before each call is served (after faults): a place to race a kubelet write against the loop. */
  beforeServe: ((call: FakeCall) => void) | undefined;
  /** Called after a pod is created: the place to script the simulated kubelet. */
  onPodCreated: ((pod: { ns: string; name: string; uid: string }) => void) | undefined;

  private rv = 100;
  private uidSeq = 0;
  private containerSeq = 0;
  private readonly namespaces = new Map<string, Stored>();
  private readonly pods = new Map<string, Stored>();
  private readonly secrets = new Map<string, Stored>();
  private readonly claims = new Map<string, Stored>();
  private readonly watchers = new Set<Watcher>();
  private readonly opts: Required<FakeClusterOptions>;

  constructor(
    readonly clock: Clock & { schedule?: (ms: number, fn: () => void) => void },
    options: FakeClusterOptions = {},
  ) {
    this.opts = {
      gracefulDeletionMs: 3000,
      serverDate: "clock",
      watchForbidden: false,
      watchTimeoutMs: 60_000,
      ...options,
    };
  }

  get requestCount(): number {
    return this.calls.length;
  }

  /** Calls that change state, in order: the "call log" tests assert on. */
  mutations(): FakeCall[] {
    return this.calls.filter((c) => c.op.startsWith("create") || c.op.startsWith("delete"));
  }

  // ---- test-facing state helpers -------------------------------------------------------------------------------

  addNamespace(ns: string): void {
    this.namespaces.set(ns, this.stamp({ metadata: { name: ns } } as unknown as Stored));
  }

  hasNamespace(ns: string): boolean {
    return this.namespaces.has(ns);
  }

  pod(ns: string, name: string): PodObject | undefined {
    const p = this.pods.get(`${ns}/${name}`);
    return p ? PodSchema.parse(clone(p)) : undefined;
  }

  secretNames(ns: string): string[] {
    return [...this.secrets.keys()].filter((k) => k.startsWith(`${ns}/`)).map((k) => k.slice(ns.length + 1));
  }

  /** The stored env of a Secret, for assertions; the Cluster interface itself never returns data. */
  secretData(ns: string, name: string): Record<string, string> | undefined {
    return clone(this.secrets.get(`${ns}/${name}`)?.stringData as Record<string, string> | undefined);
  }

  /** Puts an object in place as another writer (Buzz, a user) would, returning its uid. */
  seedPod(ns: string, body: PodObject & { metadata: { name?: string } }): string {
    const stored = this.stamp(clone(body) as unknown as Stored);
    this.pods.set(`${ns}/${stored.metadata.name}`, stored);
    this.notify(ns, stored.metadata.name, "added");
    return stored.metadata.uid;
  }

  seedSecret(ns: string, body: Record<string, unknown>, createdAtWallMs?: number): void {
    const stored = this.stamp(clone(body) as unknown as Stored);
    if (createdAtWallMs !== undefined)
      stored.metadata.creationTimestamp = new Date(createdAtWallMs).toISOString().replace(/\.\d{3}Z$/, "Z");
    this.secrets.set(`${ns}/${stored.metadata.name}`, stored);
  }

  removeSecret(ns: string, name: string): void {
    this.secrets.delete(`${ns}/${name}`);
  }

  /** The simulated kubelet: binds the pod to a node (graceful deletion from now on). */
  bind(ns: string, name: string, node = "fake-node"): void {
    this.mutatePod(ns, name, (p) => {
      (p.spec as Record<string, unknown>).nodeName = node;
    });
  }

  /**
   * The simulated kubelet writes the `agent` container state (and optionally the phase). A state past `waiting` carries
   * what a real kubelet adds: a container id (one per run, kept from the running write to the terminated one), the
   * restart count, `image` as the tag and `imageID` as the digest (issue 34).
   */
  setAgentState(
    ns: string,
    name: string,
    state: Record<string, unknown>,
    phase?: string,
    extra: { restartCount?: number } = {},
  ): void {
    this.mutatePod(ns, name, (p) => {
      const status = (p.status ?? {}) as Record<string, unknown>;
      const previous = (status.containerStatuses as Array<Record<string, unknown>> | undefined)?.[0];
      const image =
        ((p.spec as { containers?: Array<{ image?: string }> }).containers?.[0]?.image ?? "").split("@")[0] ?? "";
      const ran = state.running !== undefined || state.terminated !== undefined;
      const containerID = ran
        ? ((state.running !== undefined ? undefined : previous?.containerID) ??
          `containerd://${(++this.containerSeq).toString(16).padStart(64, "0")}`)
        : undefined;
      status.containerStatuses = [
        {
          name: "agent",
          state,
          restartCount: extra.restartCount ?? 0,
          ...(ran ? { containerID, image: `${image}:1.0`, imageID: `${image}@sha256:${"e".repeat(64)}` } : {}),
        },
      ];
      if (phase) status.phase = phase;
      p.status = status;
    });
  }

  setPodStatus(ns: string, name: string, status: Record<string, unknown>): void {
    this.mutatePod(ns, name, (p) => {
      p.status = status;
    });
  }

  /** Binds and starts the container: the common "kubelet wrote state.running" step. */
  start(ns: string, name: string): void {
    this.bind(ns, name);
    this.setAgentState(ns, name, { running: { startedAt: new Date(this.clock.wallNow()).toISOString() } }, "Running");
  }

  /**
   * A harness that exits at once, in the order a real kubelet writes it (issue 34): `running` first (the container
   * started), then at its next relist `terminated` while the phase still reads Running, then phase Failed.
   */
  crashAtStart(
    ns: string,
    name: string,
    o: { exitCode: number; detectedAfterMs: number; schedule: (ms: number, fn: () => void) => void },
  ): void {
    const uid = this.pod(ns, name)?.metadata.uid;
    const same = () => this.pod(ns, name)?.metadata.uid === uid;
    const at = new Date(this.clock.wallNow()).toISOString();
    this.start(ns, name);
    o.schedule(o.detectedAfterMs, () => {
      if (!same()) return;
      this.setAgentState(
        ns,
        name,
        {
          terminated: {
            exitCode: o.exitCode,
            reason: o.exitCode === 0 ? "Completed" : "Error",
            startedAt: at,
            finishedAt: at,
          },
        },
        "Running",
      );
      o.schedule(100, () => {
        if (same())
          this.setPodStatus(ns, name, {
            ...(this.pod(ns, name)?.status ?? {}),
            phase: o.exitCode === 0 ? "Succeeded" : "Failed",
          });
      });
    });
  }

  private mutatePod(ns: string, name: string, fn: (p: Stored) => void): void {
    const p = this.pods.get(`${ns}/${name}`);
    if (!p) throw new Error(`fake: no pod ${ns}/${name}`);
    p.spec ??= {};
    fn(p);
    p.metadata.resourceVersion = String(++this.rv);
    this.notify(ns, name, "modified");
  }

  // ---- the Cluster interface ----------------------------------------------------------------------------------

  private stamp(obj: Stored): Stored {
    const meta = obj.metadata;
    meta.uid = `uid-${++this.uidSeq}`;
    meta.resourceVersion = String(++this.rv);
    meta.creationTimestamp ??= new Date(this.clock.wallNow()).toISOString().replace(/\.\d{3}Z$/, "Z");
    return obj;
  }

  private begin(
    op: FakeOp,
    ns: string | null,
    name: string | null,
    authority?: string,
  ): { call: FakeCall; fault: ApiError | undefined } {
    const call: FakeCall = {
      op,
      ns,
      name,
      outcome: "pending",
      at: this.clock.now(),
      ...(authority ? { authority } : {}),
    };
    this.calls.push(call);
    for (const rule of this.faults) {
      const fault = rule({ op, ns, name });
      if (fault === undefined) continue;
      call.outcome = fault === "transport" ? "transport" : fault.reason;
      return {
        call,
        fault:
          fault === "transport"
            ? { kind: "transport", message: "read ECONNRESET" }
            : { kind: "status", code: fault.code, reason: fault.reason, message: fault.message ?? "" },
      };
    }
    this.beforeServe?.(call);
    return { call, fault: undefined };
  }

  private notFound(what: string, name: string): ApiError {
    return { kind: "status", code: 404, reason: "NotFound", message: `${what} "${name}" not found` };
  }

  private read<T>(
    op: FakeOp,
    store: Map<string, Stored>,
    ns: string,
    name: string,
    map: (s: Stored) => T,
  ): Promise<ReadResult<T>> {
    const { call, fault } = this.begin(op, ns, name);
    if (fault) return Promise.resolve({ kind: "error", error: fault });
    const obj = store.get(`${ns}/${name}`);
    call.outcome = obj ? "found" : "NotFound";
    return Promise.resolve(obj ? { kind: "found", object: map(clone(obj)) } : { kind: "absent" });
  }

  private create<T>(
    op: FakeOp,
    store: Map<string, Stored>,
    ns: string,
    manifest: Record<string, unknown>,
    map: (s: Stored) => T,
  ): Promise<CreateResult<T>> {
    const name = String((manifest.metadata as { name?: string }).name);
    const { call, fault } = this.begin(op, ns, name);
    if (fault) {
      if (fault.kind === "status" && fault.reason === "AlreadyExists")
        return Promise.resolve({ kind: "already-exists" });
      return Promise.resolve({ kind: "error", error: fault });
    }
    if (!this.namespaces.has(ns)) {
      call.outcome = "NotFound";
      return Promise.resolve({ kind: "error", error: this.notFound("namespaces", ns) });
    }
    if (store.has(`${ns}/${name}`)) {
      call.outcome = "AlreadyExists";
      return Promise.resolve({ kind: "already-exists" });
    }
    const stored = this.stamp(clone(manifest) as unknown as Stored);
    stored.metadata.namespace = ns;
    if (op === "createPod") stored.status = { phase: "Pending" };
    store.set(`${ns}/${name}`, stored);
    call.outcome = "created";
    if (op === "createPod") {
      this.notify(ns, name, "added");
      this.onPodCreated?.({ ns, name, uid: stored.metadata.uid });
    }
    return Promise.resolve({ kind: "created", object: map(clone(stored)) });
  }

  private list<T>(
    op: FakeOp,
    store: Map<string, Stored>,
    ns: string | null,
    selector: string,
    map: (s: Stored) => T,
  ): Promise<ListResult<T>> {
    const { call, fault } = this.begin(op, ns, null);
    if (fault) return Promise.resolve({ kind: "error", error: fault });
    const wanted = selector
      .split(",")
      .filter((s) => s !== "")
      .map((s) => s.split("=") as [string, string]);
    const items = [...store.entries()]
      .filter(([key]) => ns === null || key.startsWith(`${ns}/`))
      .map(([, v]) => v)
      .filter((v) => wanted.every(([k, val]) => (v.metadata.labels as Record<string, string> | undefined)?.[k] === val))
      .map((v) => map(clone(v)));
    call.outcome = `listed ${items.length}`;
    const d = this.opts.serverDate;
    const serverDateMs =
      d === "none" ? null : Math.floor((this.clock.wallNow() + (typeof d === "number" ? d : 0)) / 1000) * 1000;
    return Promise.resolve({ kind: "listed", items, serverDateMs });
  }

  private remove(
    store: Map<string, Stored>,
    op: FakeOp,
    ns: string,
    name: string,
    pre: ObjectPrecondition,
    authority?: string,
  ): Promise<DeleteResult> {
    const { call, fault } = this.begin(op, ns, name, authority);
    if (fault) {
      if (fault.kind === "status" && fault.reason === "NotFound") return Promise.resolve({ kind: "not-found" });
      if (fault.kind === "status" && fault.reason === "Conflict")
        return Promise.resolve({ kind: "precondition-failed" });
      return Promise.resolve({ kind: "error", error: fault });
    }
    const key = `${ns}/${name}`;
    const obj = store.get(key);
    if (!obj) {
      call.outcome = "NotFound";
      return Promise.resolve({ kind: "not-found" });
    }
    if (obj.metadata.uid !== pre.uid || obj.metadata.resourceVersion !== pre.resourceVersion) {
      call.outcome = "Conflict";
      return Promise.resolve({ kind: "precondition-failed" });
    }
    call.outcome = "accepted";
    if (store !== this.pods) {
      store.delete(key);
      return Promise.resolve({ kind: "accepted" });
    }
    const phase = (obj.status as { phase?: string } | undefined)?.phase;
    const bound = Boolean((obj.spec as { nodeName?: string } | undefined)?.nodeName);
    if (!bound || phase === "Succeeded" || phase === "Failed") {
      store.delete(key);
      this.rv++;
      this.notify(ns, name, "deleted");
      return Promise.resolve({ kind: "accepted" });
    }
    if (!obj.metadata.deletionTimestamp) {
      // Graceful: the mark is a write (resourceVersion bumps), the phase stays Running for the grace period.
      obj.metadata.deletionTimestamp = new Date(this.clock.wallNow() + 60_000).toISOString();
      obj.metadata.deletionGracePeriodSeconds = 60;
      obj.metadata.resourceVersion = String(++this.rv);
      this.notify(ns, name, "modified");
      const uid = obj.metadata.uid;
      this.schedule(this.opts.gracefulDeletionMs, () => this.finishGracefulDeletion(ns, name, uid));
    }
    return Promise.resolve({ kind: "accepted" });
  }

  /** The simulated kubelet confirms the container stopped; the apiserver then removes the object. */
  finishGracefulDeletion(ns: string, name: string, uid: string): void {
    const p = this.pods.get(`${ns}/${name}`);
    if (!p || p.metadata.uid !== uid) return;
    this.pods.delete(`${ns}/${name}`);
    this.rv++;
    this.notify(ns, name, "deleted");
  }

  private schedule(ms: number, fn: () => void): void {
    if (this.clock.schedule) this.clock.schedule(ms, fn);
    else setTimeout(fn, ms).unref?.();
  }

  /** Like a real watch event, a wake carries the object's resourceVersion (none for a deletion here: always news). */
  private notify(ns: string, name: string, kind: "added" | "modified" | "deleted"): void {
    const rv = kind === "deleted" ? undefined : this.pods.get(`${ns}/${name}`)?.metadata.resourceVersion;
    for (const w of this.watchers)
      if (!w.closed && w.ns === ns && w.name === name)
        w.handlers.onWake({ podName: name, kind, ...(rv !== undefined ? { resourceVersion: rv } : {}) });
  }

  getNamespace(ns: string): Promise<ReadResult<unknown>> {
    const { call, fault } = this.begin("getNamespace", null, ns);
    if (fault) return Promise.resolve({ kind: "error", error: fault });
    call.outcome = this.namespaces.has(ns) ? "found" : "NotFound";
    return Promise.resolve(
      this.namespaces.has(ns) ? { kind: "found", object: clone(this.namespaces.get(ns)) } : { kind: "absent" },
    );
  }

  createNamespace(manifest: Record<string, unknown>): Promise<CreateResult<unknown>> {
    const name = String((manifest.metadata as { name?: string }).name);
    const { call, fault } = this.begin("createNamespace", null, name);
    if (fault) {
      if (fault.kind === "status" && fault.reason === "AlreadyExists")
        return Promise.resolve({ kind: "already-exists" });
      return Promise.resolve({ kind: "error", error: fault });
    }
    if (this.namespaces.has(name)) {
      call.outcome = "AlreadyExists";
      return Promise.resolve({ kind: "already-exists" });
    }
    this.addNamespace(name);
    call.outcome = "created";
    return Promise.resolve({ kind: "created", object: clone(this.namespaces.get(name)) });
  }

  getPod(ns: string, name: string, _o?: RequestOptions): Promise<ReadResult<QuorumPod>> {
    return this.read("getPod", this.pods, ns, name, (s) => fromQuorumRead(PodSchema.parse(s)));
  }

  listPods(ns: string | null, selector: string): Promise<ListResult<QuorumPod>> {
    return this.list("listPods", this.pods, ns, selector, (s) => fromQuorumRead(PodSchema.parse(s)));
  }

  createPod(ns: string, manifest: Record<string, unknown>): Promise<CreateResult<QuorumPod>> {
    return this.create("createPod", this.pods, ns, manifest, (s) => fromQuorumRead(PodSchema.parse(s)));
  }

  deletePod(ns: string, name: string, fence: Fence, authority: DeleteAuthority): Promise<DeleteResult> {
    const label = authority.kind === "classified" ? authority.action.cause : authority.kind;
    return this.remove(this.pods, "deletePod", ns, name, fence, label);
  }

  getSecret(ns: string, name: string): Promise<ReadResult<SecretMeta>> {
    return this.read("getSecret", this.secrets, ns, name, (s) => ({ metadata: s.metadata }));
  }

  listSecrets(ns: string, selector: string): Promise<ListResult<SecretMeta>> {
    return this.list("listSecrets", this.secrets, ns, selector, (s) => ({ metadata: s.metadata }));
  }

  createSecret(ns: string, manifest: Record<string, unknown>): Promise<CreateResult<SecretMeta>> {
    return this.create("createSecret", this.secrets, ns, manifest, (s) => ({ metadata: s.metadata }));
  }

  deleteSecret(ns: string, name: string, pre: ObjectPrecondition): Promise<DeleteResult> {
    return this.remove(this.secrets, "deleteSecret", ns, name, pre);
  }

  getClaim(ns: string, name: string): Promise<ReadResult<ClaimObject>> {
    return this.read("getClaim", this.claims, ns, name, (s) => ClaimSchema.parse(s));
  }

  createClaim(ns: string, manifest: Record<string, unknown>): Promise<CreateResult<ClaimObject>> {
    return this.create("createClaim", this.claims, ns, manifest, (s) => ClaimSchema.parse(s));
  }

  watchPod(ns: string, name: string, fromResourceVersion: string | undefined, handlers: WatchHandlers): WatchHandle {
    const { call, fault } = this.begin("watchPod", ns, name);
    const watcher: Watcher = { ns, name, handlers, closed: false };
    const end = (why: Parameters<WatchHandlers["onEnd"]>[0]) => {
      if (watcher.closed) return;
      watcher.closed = true;
      this.watchers.delete(watcher);
      handlers.onEnd(why);
    };
    if (fault || this.opts.watchForbidden) {
      call.outcome = "Forbidden";
      queueMicrotask(() =>
        end(fault && fault !== undefined && fault.kind === "status" && fault.code !== 403 ? "error" : "forbidden"),
      );
      return { close: () => end("closed") };
    }
    call.outcome = "watching";
    this.watchers.add(watcher);
    queueMicrotask(() => {
      if (watcher.closed) return;
      handlers.onEstablished();
      // A change after the given resourceVersion is delivered at once (the watch cache replays it).
      const current = this.pods.get(`${ns}/${name}`);
      if (
        fromResourceVersion !== undefined &&
        current &&
        Number(current.metadata.resourceVersion) > Number(fromResourceVersion)
      ) {
        handlers.onWake({ podName: name, kind: "modified" });
      }
    });
    this.schedule(this.opts.watchTimeoutMs, () => end("closed"));
    return { close: () => end("closed") };
  }

  readLog(ns: string, name: string, opts: { onChunk: (chunk: string) => void }): Promise<LogResult> {
    const { call, fault } = this.begin("readLog", ns, name);
    if (fault) return Promise.resolve({ kind: "error", error: fault });
    const p = this.pods.get(`${ns}/${name}`);
    call.outcome = p ? "found" : "NotFound";
    if (!p) return Promise.resolve({ kind: "absent" });
    opts.onChunk(`log of ${name}\n`);
    return Promise.resolve({ kind: "done" });
  }

  close(): void {
    for (const w of [...this.watchers]) {
      w.closed = true;
      this.watchers.delete(w);
    }
  }

  /** Describes a fault the way the loop renders `{e}`, for assertions. */
  static describe(fault: ApiError): string {
    return describeApiError(fault);
  }
}
