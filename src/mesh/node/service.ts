/**
 * The node's host service (spec/mesh.md §4.6, §11): verifies every request in the spec's order, runs the method, and
 * answers with a signed response. Structural rules, each protecting an invariant of §1:
 *
 * - a `place`/`load` marks its decision in flight before fetching anything, and inserts the instance row before the
 *   in-flight mark is cleared; `status` reads in-flight rows before instances in one read transaction, so a decision
 *   is always visible as one or the other (I1, §10.3);
 * - the package is fetched over the request's own connection, so a request whose connection is gone can never load;
 * - nothing runs unless the package verifies against this node's own trusted signers (I6);
 * - a start that fails after load is rolled back (unloaded) and refused; if the unload fails the row stays listed;
 * - every state change commits with its chain event (I7); every refusal by a handler is chained.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { nodeIdOf, type SigningKey } from "../../core/crypto/ed25519.js";
import { sha256 } from "../../core/crypto/tagged.js";
import { evaluate, type GatePolicy, type GateVerdict, type WorkloadContext } from "../../core/governance/gate.js";
import type { PermitRule, RevocationList } from "../../core/governance/policy.js";
import { archOfNode, type Envelope, type Variant, verifyEnvelope } from "../../core/packages/manifest.js";
import { type BodyOf, parseBody } from "../../core/protocol/bodies.js";
import {
  composeReason,
  isMethod,
  METHODS,
  type Outcome,
  type RefusalCode,
  type SignedMessage,
  truncateUtf8,
} from "../../core/protocol/messages.js";
import { NonceGuard } from "../../core/protocol/nonce-guard.js";
import { signResponse } from "../../core/protocol/sign.js";
import { type VerifiedRequest, verifyRequest } from "../../core/protocol/verify.js";
import type { FrameStream } from "../transport/frames.js";
import { loadPermits, loadRevocations, loadSigners, type PolicyFile } from "../policy/files.js";
import { FILES, type NodeConfig } from "./config.js";
import { Connections } from "./connection.js";
import { type ContentStore, FetchFailure, PackageFetcher } from "./content.js";
import { availableMemory, buildFacts, signFacts } from "./facts.js";
import { groupAlive, type NativeRuntime, type ProcessIdentity } from "./runtime.js";
import type { InstanceRow, LaunchSpec, NodeStore } from "./store.js";

/** An expected refusal inside a handler; caught at the dispatch boundary and answered (never a crash). */
class Refusal extends Error {
  constructor(
    readonly code: RefusalCode,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export interface NodeServiceOptions {
  readonly dataDir: string;
  readonly key: SigningKey;
  readonly config: NodeConfig;
  readonly bootId: string;
  readonly store: NodeStore;
  readonly runtime: NativeRuntime;
  readonly content: ContentStore;
  readonly clock: () => number;
  readonly version: string;
  /** Controller keys and signer keys given by flags, in addition to node.json and signers.json. */
  readonly extraControllers?: readonly string[];
  readonly extraSigners?: readonly string[];
  readonly perf?: readonly JsonObject[];
  readonly fetchTimeoutMs?: number;
}

interface Policy {
  readonly signers: ReadonlySet<string>;
  readonly permits: readonly PermitRule[];
  readonly revocations: RevocationList | null;
}

const UNAUTH_BUDGET = 16;
const UNAUTH_WINDOW_MS = 60_000;

export class NodeService {
  readonly nodeId: string;
  private readonly guard: NonceGuard;
  private readonly policyHashes = new Map<string, string | null>();
  private readonly stopping = new Set<string>();
  private unauthWindow = { start: 0, chained: 0, suppressed: 0 };
  private readonly connections: Connections;

  constructor(private readonly o: NodeServiceOptions) {
    this.nodeId = nodeIdOf(o.key.publicKey);
    this.guard = new NonceGuard(o.config.limits.nonce_guard);
    o.runtime.onExit((id, exit) => this.onProcessExit(id, exit));
    this.connections = new Connections(() => this.o.config.limits, (signed, stream) => this.handle(signed, stream));
  }

  get bootId(): string {
    return this.o.bootId;
  }

  // -- connection --------------------------------------------------------------------------------------------

  /** Serves one connection (the loop is `connection.ts`). Never throws. */
  serve(stream: FrameStream): Promise<void> {
    return this.connections.serve(stream);
  }

  closeAll(): void {
    this.connections.closeAll();
  }

  /** Verifies and runs one request; returns the signed answer and whether to close the connection. */
  async handle(signed: SignedMessage, stream: FrameStream): Promise<{ signed: SignedMessage; close: boolean }> {
    const verdict = verifyRequest(signed, {
      nodeId: this.nodeId,
      bootId: this.o.bootId,
      nowMs: this.o.clock(),
      authorised: this.authorised(),
      guard: this.guard,
    });
    // Issue 12: an accepted request's connection keeps its slot (transport/admission.ts); any other may be evicted
    // (a replayed capture is refused from check 14 on and must not earn a slot).
    if (verdict.kind === "accepted") stream.markAuthenticated?.();
    if (verdict.kind === "refused") {
      if (verdict.authenticated) this.chainRefusal("handle", verdict.code, verdict.reason, verdict.method, verdict.requester, verdict.decisionId);
      else this.chainUnauthenticated(verdict.code, verdict.reason, verdict.method, verdict.requester, verdict.decisionId);
      const answer = this.answer(verdict.method, verdict.nonce, { status: "refused", code: verdict.code, reason: truncateUtf8(verdict.reason, 1024) });
      return { signed: answer, close: !verdict.authenticated };
    }
    const req = verdict.request;
    let outcome: Outcome;
    try {
      const result = await this.dispatch(req, stream);
      outcome = { status: "ok", result };
    } catch (error) {
      const refusal = error instanceof Refusal ? error : new Refusal("runtime", `internal error: ${(error as Error).message ?? String(error)}`);
      const reason = truncateUtf8(refusal.reason, 1024);
      outcome = { status: "refused", code: refusal.code, reason };
      // §11: chained after any rollback, in the transaction that clears the decision's in-flight mark.
      const clearInflight = (req.method === "place" || req.method === "load") && this.ownsInflight.has(req.nonce);
      this.store().commit((tx) => {
        if (clearInflight && req.decision_id) this.store().deleteInflight(tx, req.decision_id);
        return { result: null, events: [this.refusalEvent("handle", refusal.code, reason, req.method, req.requester, req.decision_id)] };
      });
    } finally {
      this.ownsInflight.delete(req.nonce);
    }
    return { signed: this.answer(req.method, req.nonce, outcome), close: false };
  }

  private readonly ownsInflight = new Set<string>();

  private dispatch(req: VerifiedRequest, stream: FrameStream): Promise<JsonObject> | JsonObject {
    if (!isMethod(req.method)) {
      // §4.6: after check 15, an unknown method is submitted to the gate as workload.<method>, which denies it.
      this.gate(`workload.${req.method}`, this.emptyContext(req.requester));
      throw new Refusal("unknown_method", `method ${req.method} is not one of ${METHODS.join(", ")}`);
    }
    switch (req.method) {
      case "describe":
        return this.describe();
      case "place":
      case "load":
        return this.place(req, stream, req.method);
      case "start":
        return this.start(req, this.body("start", req.body));
      case "stop":
        return this.stop(req, this.body("stop", req.body));
      case "unload":
        return this.unload(req, this.body("unload", req.body));
      case "status":
        return this.status(this.body("status", req.body));
      case "logs":
        return this.logs(this.body("logs", req.body));
      default: {
        const never: never = req.method;
        throw new Refusal("unknown_method", `method ${String(never)} is not handled`);
      }
    }
  }

  private body<M extends "start" | "stop" | "unload" | "status" | "logs" | "place">(method: M, body: unknown): BodyOf<M> {
    const parsed = parseBody(method, body);
    if (!parsed.ok) throw new Refusal("invalid_request", parsed.reason);
    return parsed.body;
  }

  // -- describe ----------------------------------------------------------------------------------------------

  private describe(): JsonObject {
    const now = this.o.clock();
    const seq = this.store().commit((tx) => {
      const next = Number(this.store().meta("facts_seq") ?? "0") + 1;
      this.store().setMeta(tx, "facts_seq", String(next));
      return { result: next, events: [] };
    });
    const facts = buildFacts({
      nodeId: this.nodeId,
      bootId: this.o.bootId,
      seq,
      nowMs: now,
      ttlS: this.o.config.facts_ttl_s,
      name: this.o.config.name,
      board: this.o.config.board ?? "generic",
      labels: this.o.config.labels,
      interpreters: this.o.config.interpreters.filter((i) => existsSync(i.path)),
      perf: this.o.perf ?? [],
      instances: this.store().instances().length,
    });
    return {
      node_id: this.nodeId,
      boot_id: this.o.bootId,
      version: this.o.version,
      methods: [...METHODS],
      facts: signFacts(this.o.key, facts) as unknown as JsonObject,
      clock_ms: now,
    };
  }

  // -- place / load (§11.1) ----------------------------------------------------------------------------------

  private async place(req: VerifiedRequest, stream: FrameStream, method: "place" | "load"): Promise<JsonObject> {
    const decisionId = req.decision_id as string;
    const now = this.o.clock();
    // 1. mark in flight first
    const pol0 = this.policy();
    this.store().commit((tx) => {
      if (this.store().inflight(decisionId)) throw new Refusal("invalid_request", `decision ${decisionId} is already being handled`);
      const existing = this.store().instanceByDecision(decisionId);
      if (existing) throw new Refusal("invalid_request", `decision ${decisionId} already placed as ${existing.instance_id}`);
      this.store().insertInflight(tx, {
        decision_id: decisionId,
        method,
        requester: req.requester,
        boot_id: this.o.bootId,
        started_ms: now,
        revocation_generation: pol0.revocations?.generation ?? -1,
      });
      return { result: null, events: [] };
    });
    this.ownsInflight.add(req.nonce);
    // 2. body
    const body = this.body("place", req.body);
    // 3. fetch and verify, over this connection (§5.4)
    const fetcher = new PackageFetcher(stream, body.package_id, this.o.fetchTimeoutMs ?? 30_000);
    const manifest = await this.fetching(() => fetcher.manifest());
    const pol = this.policy();
    const verified = verifyEnvelope(manifest, { expectedId: body.package_id, trustedSigners: pol.signers, revocations: pol.revocations });
    if (!verified.ok) throw new Refusal("verify", verified.reason);
    const statement = verified.envelope.statement;
    const variant = statement.variants.find((v) => v.id === body.variant);
    if (!variant) throw new Refusal("invalid_request", `body.variant ${body.variant} is not a variant of package ${statement.name}`);
    const stored = new Map<string, string>();
    for (const file of statement.files) stored.set(file.path, await this.fetching(() => this.o.content.ensure(file, fetcher)));
    // 4. route
    const route = this.routeFor(variant);
    if (route === null) throw new Refusal("admission", `no route on this node for variant ${variant.id}`);
    // 5. gate load
    const launch = this.launchSpec(verified.envelope, verified.signers, variant, body.config);
    const ctx = this.contextOf(launch, body.package_id, req.requester, route === "emulated");
    const load = this.gate("workload.load", ctx);
    if (load.decision !== "permit") throw new Refusal("governance", `workload.load denied: ${load.reason}`);
    // 6. admission
    this.admit(launch);
    // 7. still valid
    if (req.expires_at_ms <= this.o.clock()) throw new Refusal("expired", "the request expired while it was being handled");
    // 8. insert the instance row, before the in-flight mark is cleared
    const instanceId = `${body.name}-${sha256(`${decisionId}:${this.nodeId}`).toString("hex").slice(0, 12)}`;
    const row: InstanceRow = {
      instance_id: instanceId,
      decision_id: decisionId,
      name: body.name,
      package_id: body.package_id,
      variant: variant.id,
      route,
      state: "loading",
      exit_code: null,
      signal: null,
      detail: null,
      pid: null,
      host_boot_id: null,
      start_marker: null,
      started_ms: null,
      requester: req.requester,
      created_ms: this.o.clock(),
      launch,
      agent: body.agent ?? null,
      intent: body.intent ?? null,
      generation: 0,
    };
    this.store().commit((tx) => {
      if (this.store().instance(instanceId)) throw new Refusal("invalid_request", `instance ${instanceId} already exists`);
      this.store().insertInstance(tx, row);
      return { result: null, events: [] };
    });
    // 9. materialise
    try {
      this.o.runtime.materialise(
        instanceId,
        statement.files.map((f) => ({ path: f.path, mode: f.mode, source: stored.get(f.path) as string })),
      );
    } catch (error) {
      this.o.runtime.remove(instanceId);
      const message = (error as Error).message;
      this.store().commit((tx) => {
        this.store().removeInstance(tx, instanceId, decisionId, "load failed", this.o.clock());
        return { result: null, events: [this.runtimeEvent("workload.load", row, { outcome: "error", error: truncateUtf8(message, 512) })] };
      });
      throw new Refusal("runtime", composeReason("materialise failed: ", message));
    }
    // 10. loaded
    this.store().commit((tx) => {
      this.store().updateInstance(tx, instanceId, { state: "loaded" });
      return { result: null, events: [this.runtimeEvent("workload.load", row, { outcome: "ok" })] };
    });
    // 11. start, with rollback
    let started = false;
    let identity: ProcessIdentity | null = null;
    if (method === "place") {
      const start = this.gate("workload.start", ctx);
      if (start.decision !== "permit") {
        throw await this.rollback(row, "governance", `governance: workload.start denied: ${start.reason}`, null);
      }
      try {
        identity = await this.spawn(row);
        started = true;
      } catch (error) {
        throw await this.rollback(row, "runtime", (error as Error).message, null);
      }
    }
    // 12. revoked while it was being placed
    const pol2 = this.policy();
    if ((pol2.revocations?.generation ?? -1) !== (pol0.revocations?.generation ?? -1) && this.revokedSubject(row, pol2.revocations) !== null) {
      await this.forcedTeardown(row, this.revokedSubject(row, pol2.revocations) as string);
      throw new Refusal("governance", "revoked while it was being placed");
    }
    // 13. placed; clear in-flight
    const final = this.store().instance(instanceId) as InstanceRow;
    this.store().commit((tx) => {
      this.store().deleteInflight(tx, decisionId);
      return {
        result: null,
        events: [
          {
            source: "node",
            kind: "workload.place",
            payload: {
              phase: "placed",
              node: this.nodeId,
              requester: req.requester,
              decision_id: decisionId,
              name: body.name,
              package_id: body.package_id,
              variant: variant.id,
              route,
              instance_id: instanceId,
              started,
            },
          },
        ],
      };
    });
    this.ownsInflight.delete(req.nonce);
    // 14.
    return {
      instance_id: instanceId,
      name: body.name,
      variant: variant.id,
      route,
      package_id: body.package_id,
      state: final.state,
      pid: identity?.pid ?? null,
      node_id: this.nodeId,
      generation: final.generation,
    };
  }

  private async fetching<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof FetchFailure) throw new Refusal(error.code, error.message);
      throw new Refusal("fetch", (error as Error).message);
    }
  }

  private routeFor(variant: Variant): "native" | "emulated" | null {
    const arch = archOfNode(process.arch);
    const os = process.platform === "darwin" ? "darwin" : "linux";
    const archOk = variant.arch === "any" || variant.arch === arch;
    const osOk = variant.os === "any" || variant.os === os;
    return archOk && osOk ? "native" : null;
  }

  private launchSpec(envelope: Envelope, signers: readonly string[], variant: Variant, config: BodyOf<"place">["config"]): LaunchSpec {
    const s = envelope.statement;
    return {
      program: variant.entry.program,
      args: [...variant.entry.args, ...config.args],
      env: { ...config.env },
      mode: config.mode,
      kind: s.kind,
      network: s.network,
      secrets: [...s.secrets],
      cpu_millis: s.resources.cpu_millis,
      memory_mb: s.resources.memory_mb,
      signer_keys: [...signers],
      file_hashes: s.files.map((f) => f.sha256),
    };
  }

  private admit(launch: LaunchSpec): void {
    const instances = this.store().instances().length;
    if (instances >= this.o.config.max_instances) throw new Refusal("admission", `instance limit ${this.o.config.max_instances} reached`);
    if (launch.memory_mb > 0) {
      const avail = availableMemory();
      if ( launch.memory_mb * 1024 * 1024 > avail) throw new Refusal("admission", `not enough memory: ${launch.memory_mb} MiB declared`);
    }
    if (launch.program.startsWith("@")) {
      const name = launch.program.slice(1);
      const interp = this.o.config.interpreters.find((i) => i.name === name);
      if (!interp || !existsSync(interp.path)) throw new Refusal("admission", `interpreter ${name} is not declared on this node`);
    }
    for (const secret of launch.secrets) {
      if (!existsSync(join(this.o.dataDir, "secrets", secret))) throw new Refusal("admission", `secret ${secret} is not provisioned on this node`);
    }
  }

  /** Spawns the instance's process and records its identity with state `running` (one transaction each step). */
  private async spawn(row: InstanceRow): Promise<ProcessIdentity> {
    this.store().commit((tx) => {
      this.store().updateInstance(tx, row.instance_id, { state: "starting", detail: null });
      return { result: null, events: [] };
    });
    const l = row.launch;
    const workDir = this.o.runtime.workDirOf(row.instance_id);
    let program = join(workDir, l.program);
    if (l.program.startsWith("@")) {
      const interp = this.o.config.interpreters.find((i) => i.name === l.program.slice(1));
      if (!interp) throw new Error(`interpreter ${l.program.slice(1)} is not declared`);
      program = interp.path;
    }
    const env: Record<string, string> = {
      PATH: "/usr/local/bin:/usr/bin:/bin",
      HOME: workDir,
      TMPDIR: join(this.o.runtime.dirOf(row.instance_id), "tmp"),
      LANG: "C.UTF-8",
      ...l.env,
      BERTH_INSTANCE_ID: row.instance_id,
      BERTH_NAME: row.name,
      BERTH_NODE_ID: this.nodeId,
      BERTH_DECISION_ID: row.decision_id,
      BERTH_PACKAGE_ID: row.package_id,
    };
    for (const secret of l.secrets) env[secret] = readFileSync(join(this.o.dataDir, "secrets", secret), "utf8").replace(/\n$/, "");
    let identity: ProcessIdentity;
    try {
      identity = await this.o.runtime.start(row.instance_id, { program, args: l.args, env });
    } catch (error) {
      this.store().commit((tx) => {
        this.store().updateInstance(tx, row.instance_id, { state: "failed", detail: `spawn failed: ${(error as Error).message}` });
        return { result: null, events: [this.runtimeEvent("workload.start", row, { outcome: "error", error: truncateUtf8((error as Error).message, 512) })] };
      });
      throw new Error(`spawn failed: ${(error as Error).message}`);
    }
    const generation = (this.store().instance(row.instance_id)?.generation ?? 0) + 1;
    this.store().commit((tx) => {
      this.store().updateInstance(tx, row.instance_id, {
        state: "running",
        pid: identity.pid,
        host_boot_id: identity.host_boot_id,
        start_marker: identity.start_marker,
        started_ms: this.o.clock(),
        exit_code: null,
        signal: null,
        detail: null,
        generation,
      });
      return { result: null, events: [this.runtimeEvent("workload.start", row, { outcome: "ok", pid: identity.pid, generation })] };
    });
    return identity;
  }

  /** §11.1 step 11: undo a load whose start failed. Returns the refusal to answer with. */
  private async rollback(row: InstanceRow, code: RefusalCode, error: string, identity: ProcessIdentity | null): Promise<Refusal> {
    let unloadError: string | null = null;
    try {
      if (identity) {
        const stopped = await this.o.runtime.stop(identity, 2000);
        if (!stopped.stopped) unloadError = "the process group did not exit";
      }
      if (unloadError === null) {
        const verdict = this.gate("workload.unload", this.contextOf(row.launch, row.package_id, row.requester, row.route === "emulated"));
        if (verdict.decision !== "permit") unloadError = `governance: workload.unload denied: ${verdict.reason}`;
      }
      if (unloadError === null) {
        this.o.runtime.remove(row.instance_id);
        this.store().commit((tx) => {
          this.store().removeInstance(tx, row.instance_id, row.decision_id, "rolled back", this.o.clock());
          return { result: null, events: [this.runtimeEvent("workload.unload", row, { outcome: "ok", rollback: true })] };
        });
      }
    } catch (e) {
      unloadError = (e as Error).message;
    }
    if (unloadError !== null) {
      const why = unloadError;
      this.store().commit((tx) => {
        this.store().updateInstance(tx, row.instance_id, { state: "failed", detail: truncateUtf8(`start failed; rollback unload failed: ${why}`, 1024) });
        return { result: null, events: [this.runtimeEvent("workload.unload", row, { outcome: "error", rollback: true, error: truncateUtf8(why, 512) })] };
      });
      return new Refusal(
        code,
        composeReason("start failed: ", error, `; unload of ${row.instance_id} failed too (${truncateUtf8(why, 256)}), it stays listed`),
      );
    }
    return new Refusal(code, composeReason("start failed: ", error, `; loaded instance ${row.instance_id} unloaded`));
  }

  // -- start / stop / unload / status / logs (§11.2, §11.3) ---------------------------------------------------

  private held(id: string): InstanceRow {
    const row = this.store().instance(id);
    if (!row) throw new Refusal("unknown_instance", `instance ${id} is not held by this node`);
    return row;
  }

  private async start(req: VerifiedRequest, body: BodyOf<"start">): Promise<JsonObject> {
    const row = this.held(body.instance_id);
    if (row.state === "running") return { started: false, already: true };
    if (row.state === "loading" || row.state === "starting") throw new Refusal("invalid_request", `instance ${row.instance_id} is ${row.state}`);
    const verdict = this.gate("workload.start", this.contextOf(row.launch, row.package_id, req.requester, row.route === "emulated"));
    if (verdict.decision !== "permit") throw new Refusal("governance", `workload.start denied: ${verdict.reason}`);
    try {
      await this.spawn(row);
    } catch (error) {
      throw new Refusal("runtime", (error as Error).message);
    }
    return { started: true, already: false };
  }

  private async stop(req: VerifiedRequest, body: BodyOf<"stop">): Promise<JsonObject> {
    const row = this.held(body.instance_id);
    const verdict = this.gate("workload.stop", this.contextOf(row.launch, row.package_id, req.requester, row.route === "emulated"));
    if (verdict.decision !== "permit") throw new Refusal("governance", `workload.stop denied: ${verdict.reason}`);
    const result = await this.stopProcess(row, body.grace_ms, "workload.stop", req.decision_id);
    if (!result.stopped) throw new Refusal("runtime", `instance ${row.instance_id} did not stop after SIGKILL`);
    return { stopped: !result.already, already: result.already, exit_code: result.exit_code, signal: result.signal };
  }

  /** Stops a running instance's group; records state `stopped` with the chain event. */
  private async stopProcess(
    row: InstanceRow,
    graceMs: number,
    kind: string,
    decisionId: string | null,
  ): Promise<{ stopped: boolean; already: boolean; exit_code: number | null; signal: string | null }> {
    const identity = identityOf(row);
    if (!identity || !groupAlive(identity.pid) || !(row.state === "running" || row.state === "starting")) {
      return { stopped: true, already: true, exit_code: row.exit_code, signal: row.signal };
    }
    this.stopping.add(row.instance_id);
    try {
      const stopped = await this.o.runtime.stop(identity, graceMs);
      if (!stopped.stopped) return { stopped: false, already: false, exit_code: null, signal: stopped.signal };
      const status = this.o.runtime.exitStatus(row.instance_id);
      const exitCode = status?.exit_code ?? null;
      const signal = status?.signal ?? stopped.signal;
      this.store().commit((tx) => {
        this.store().updateInstance(tx, row.instance_id, { state: "stopped", exit_code: exitCode, signal, detail: null });
        return {
          result: null,
          events: [this.runtimeEvent(kind, row, { outcome: "ok", exit_code: exitCode, signal, ...(decisionId ? { decision_id: decisionId } : {}) })],
        };
      });
      return { stopped: true, already: false, exit_code: exitCode, signal };
    } finally {
      this.stopping.delete(row.instance_id);
    }
  }

  private async unload(req: VerifiedRequest, body: BodyOf<"unload">): Promise<JsonObject> {
    const row = this.held(body.instance_id);
    // Issue 7: a fenced unload names the generation it observed; a restarted (changed) instance is never touched.
    if (body.generation !== undefined && body.generation !== row.generation) {
      throw new Refusal("invalid_request", `generation precondition failed: instance ${row.instance_id} is at generation ${row.generation}, not ${body.generation}`);
    }
    const verdict = this.gate("workload.unload", this.contextOf(row.launch, row.package_id, req.requester, row.route === "emulated"));
    if (verdict.decision !== "permit") throw new Refusal("governance", `workload.unload denied: ${verdict.reason}`);
    const stopped = await this.stopProcess(row, 2000, "workload.stop", req.decision_id);
    if (!stopped.stopped) {
      this.store().commit((tx) => {
        this.store().updateInstance(tx, row.instance_id, { detail: "unload failed: the process group did not exit" });
        return { result: null, events: [] };
      });
      throw new Refusal("runtime", `unload of ${row.instance_id} failed: the process group did not exit`);
    }
    try {
      this.o.runtime.remove(row.instance_id);
    } catch (error) {
      this.store().commit((tx) => {
        this.store().updateInstance(tx, row.instance_id, { detail: `unload failed: ${(error as Error).message}` });
        return { result: null, events: [] };
      });
      throw new Refusal("runtime", `unload of ${row.instance_id} failed: ${(error as Error).message}`);
    }
    this.store().commit((tx) => {
      this.store().removeInstance(tx, row.instance_id, req.decision_id ?? row.decision_id, "unloaded", this.o.clock());
      return { result: null, events: [this.runtimeEvent("workload.unload", row, { outcome: "ok", decision_id: req.decision_id ?? row.decision_id })] };
    });
    return { unloaded: true };
  }

  private status(body: BodyOf<"status">): JsonObject {
    if (body.instance_id !== null) return { row: statusRow(this.held(body.instance_id)) as unknown as JsonObject };
    const since = body.include_departed ? this.o.clock() - 7 * 24 * 3600 * 1000 : null;
    const snap = this.store().snapshot(since);
    const rows: JsonObject[] = [
      ...snap.inflight.map((r) => ({ decision_id: r.decision_id, in_flight: true, method: r.method, since_ms: r.started_ms })),
      ...snap.instances.map((r) => statusRow(r) as unknown as JsonObject),
      ...snap.departed.map((d) => ({ instance_id: d.instance_id, decision_id: d.decision_id, departed: d.reason, at_ms: d.at_ms })),
    ];
    return { rows: rows.slice(0, 4096) };
  }

  private logs(body: BodyOf<"logs">): JsonObject {
    const row = this.held(body.instance_id);
    return { ...this.o.runtime.readLogs(row.instance_id, body.tail_bytes), state: row.state, exit_code: row.exit_code };
  }

  // -- process exits, revocation sweep -------------------------------------------------------------------------

  /** A process the daemon spawned ended; re-adopted processes are found by `pollAdopted`. */
  private onProcessExit(instanceId: string, exit: { code: number | null; signal: string | null }): void {
    if (this.stopping.has(instanceId)) return;
    const row = this.store().instance(instanceId);
    if (row?.state !== "running") return;
    const status = this.o.runtime.exitStatus(instanceId);
    this.recordExit(row, status?.exit_code ?? exit.code, status?.signal ?? exit.signal, "process exited");
  }

  recordExit(row: InstanceRow, exitCode: number | null, signal: string | null, detail: string, state: "exited" | "lost" = "exited"): void {
    this.store().commit((tx) => {
      this.store().updateInstance(tx, row.instance_id, { state, exit_code: exitCode, signal, detail });
      return {
        result: null,
        events: [
          {
            source: "runtime",
            kind: "workload.exit",
            payload: { instance_id: row.instance_id, exit_code: exitCode, signal, runtime_ms: row.started_ms ? Math.max(0, this.o.clock() - row.started_ms) : 0 },
          },
        ],
      };
    });
  }

  /** §13: trim every instance's logs over 1 MiB to the last 64 KiB (the daemon calls this every 10 s). */
  trimAllLogs(): void {
    for (const row of this.store().instances()) this.o.runtime.trimLogs(row.instance_id);
  }

  /** Instances re-adopted after a restart are not our children: poll their identity. */
  pollAdopted(): void {
    for (const row of this.store().instances()) {
      if (row.state !== "running" || this.o.runtime.isChild(row.instance_id) || this.stopping.has(row.instance_id)) continue;
      const probe = this.o.runtime.probe(row.instance_id, identityOf(row));
      if (probe.state === "exited") this.recordExit(row, probe.exit_code, probe.signal, probe.detail);
      else if (probe.state === "lost") this.recordExit(row, null, null, probe.detail, "lost");
    }
  }

  private revokedSubject(row: InstanceRow, revocations: RevocationList | null): string | null {
    if (!revocations) return null;
    for (const s of revocations.subjects) {
      if (s.kind === "package" && s.id === row.package_id) return `package ${s.id}`;
      if (s.kind === "signer" && row.launch.signer_keys.includes(s.id)) return `signer ${s.id}`;
      if (s.kind === "file" && row.launch.file_hashes.includes(s.id)) return `file ${s.id}`;
    }
    return null;
  }

  /** §11.4: stop and unload, without the gate, every instance whose package, signer or file is revoked. */
  async sweepRevoked(): Promise<number> {
    // One sweep at a time: overlapping sweeps would tear the same instance down twice.
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const pol = this.policy();
      let removed = 0;
      for (const row of this.store().instances()) {
        const subject = this.revokedSubject(row, pol.revocations);
        // A row may have left since the list was read (an unload raced the sweep).
        // A row whose decision is still in flight is left to its handler (§11.1 step 12 re-checks revocations).
        if (subject === null || this.store().inflight(row.decision_id) || !this.store().instance(row.instance_id)) continue;
        if (await this.forcedTeardown(row, subject)) removed++;
      }
      return removed;
    } finally {
      this.sweeping = false;
    }
  }

  private sweeping = false;

  private async forcedTeardown(row: InstanceRow, subject: string): Promise<boolean> {
    const identity = identityOf(row);
    if (identity && groupAlive(identity.pid)) {
      this.stopping.add(row.instance_id);
      try {
        const stopped = await this.o.runtime.stop(identity, 2000);
        if (!stopped.stopped) {
          this.store().commit((tx) => {
            this.store().updateInstance(tx, row.instance_id, { state: "failed", detail: `forced stop failed (${subject} revoked)` });
            return { result: null, events: [] };
          });
          return false;
        }
      } finally {
        this.stopping.delete(row.instance_id);
      }
      this.store().append({ source: "node", kind: "workload.stop", payload: { phase: "forced", instance_id: row.instance_id, subject } });
    }
    this.o.runtime.remove(row.instance_id);
    this.store().commit((tx) => {
      this.store().removeInstance(tx, row.instance_id, row.decision_id, `revoked: ${subject}`, this.o.clock());
      return { result: null, events: [{ source: "node", kind: "workload.unload", payload: { phase: "forced", instance_id: row.instance_id, subject } }] };
    });
    return true;
  }

  // -- policy, gate, chain helpers -----------------------------------------------------------------------------

  private store(): NodeStore {
    return this.o.store;
  }

  private authorised(): ReadonlySet<string> {
    return new Set([...this.o.config.controllers.map((c) => c.key), ...(this.o.extraControllers ?? [])]);
  }

  /** Re-reads the policy files (they are small) and chains `policy.load` whenever one changed. Fails closed. */
  policy(): Policy {
    const signers = loadSigners(this.o.dataDir);
    const permits = loadPermits(this.o.dataDir);
    const revocations = loadRevocations(this.o.dataDir);
    for (const f of [signers, permits, revocations] as PolicyFile<unknown>[]) this.notePolicy(f);
    return {
      signers: new Set([...(signers.loaded.ok ? signers.loaded.value : []), ...(this.o.extraSigners ?? [])]),
      permits: permits.loaded.ok ? permits.loaded.value : [],
      revocations: revocations.loaded.ok ? revocations.loaded.value : null,
    };
  }

  private notePolicy(f: PolicyFile<unknown>): void {
    const fingerprint = `${f.sha256}:${f.loaded.ok}`;
    if (this.policyHashes.get(f.file) === fingerprint) return;
    this.policyHashes.set(f.file, fingerprint);
    this.store().append({
      source: "trust",
      kind: "policy.load",
      payload: { file: f.file, sha256: f.sha256, ok: f.loaded.ok, error: f.loaded.ok ? null : truncateUtf8(f.loaded.error, 512) },
    });
  }

  private gatePolicy(): GatePolicy {
    const pol = this.policy();
    return {
      permits: pol.permits,
      revocations: pol.revocations,
      thresholdMilli: this.o.config.gate.threshold_milli,
      builtinTeardown: this.o.config.gate.builtin_teardown,
      humanApproval: this.o.config.gate.human_approval,
    };
  }

  /** Every verdict from step 2 on is appended to the node chain (§7.7). */
  private gate(action: string, ctx: WorkloadContext): GateVerdict {
    const verdict = evaluate(action, ctx, this.gatePolicy(), this.nodeId);
    if (verdict.chain) this.store().append({ source: "gate", kind: verdict.chainKind, payload: verdict.payload });
    return verdict;
  }

  private contextOf(l: LaunchSpec, packageId: string, agent: string, emulated: boolean): WorkloadContext {
    return {
      kind: l.kind,
      package_trust: "pinned_signer",
      node_tier: this.o.config.self_tier,
      network: l.network,
      secrets: l.secrets.length > 0,
      emulated,
      accelerator: null,
      cpu_millis: l.cpu_millis,
      refs: { package_id: packageId, signer_keys: l.signer_keys, file_hashes: l.file_hashes },
      agent,
    };
  }

  private emptyContext(agent: string): WorkloadContext {
    return {
      kind: "unknown",
      package_trust: "unsigned",
      node_tier: this.o.config.self_tier,
      network: "none",
      secrets: false,
      emulated: false,
      accelerator: null,
      cpu_millis: 0,
      refs: { package_id: null, signer_keys: [], file_hashes: [] },
      agent,
    };
  }

  private answer(method: string, nonce: string, outcome: Outcome): SignedMessage {
    return signResponse(this.o.key, { method, bootId: this.o.bootId, requestNonce: nonce, outcome }).signed;
  }

  private runtimeEvent(kind: string, row: InstanceRow, extra: JsonObject) {
    return {
      source: "runtime",
      kind,
      payload: { instance_id: row.instance_id, decision_id: row.decision_id, package_id: row.package_id, route: row.route, ...extra },
    };
  }

  private refusalEvent(phase: string, code: string, reason: string, method: string, requester: string | null, decisionId: string | null, suppressed = 0) {
    return {
      source: "node",
      kind: "workload.refuse",
      payload: { phase, node: this.nodeId, code, reason, method, requester, decision_id: decisionId, suppressed },
    };
  }

  private chainRefusal(phase: string, code: string, reason: string, method: string, requester: string | null, decisionId: string | null): void {
    this.store().append(this.refusalEvent(phase, code, reason, method, requester, decisionId));
  }

  /** Unauthenticated refusals are chained at most 16 per 60 s; skipped ones are counted on the next (§4.6). */
  private chainUnauthenticated(code: string, reason: string, method: string, requester: string | null, decisionId: string | null): void {
    const now = this.o.clock();
    if (now - this.unauthWindow.start >= UNAUTH_WINDOW_MS) this.unauthWindow = { start: now, chained: 0, suppressed: this.unauthWindow.suppressed };
    if (this.unauthWindow.chained >= UNAUTH_BUDGET) {
      this.unauthWindow.suppressed++;
      return;
    }
    this.unauthWindow.chained++;
    const suppressed = this.unauthWindow.suppressed;
    this.unauthWindow.suppressed = 0;
    // The method and requester of an unauthenticated request are attacker-chosen text: bound them.
    this.store().append(
      this.refusalEvent("verify", code, reason, truncateUtf8(method, 64), requester ? truncateUtf8(requester, 64) : null, decisionId ? truncateUtf8(decisionId, 64) : null, suppressed),
    );
  }
}

export function identityOf(row: InstanceRow): ProcessIdentity | null {
  return row.pid !== null && row.host_boot_id !== null && row.start_marker !== null
    ? { pid: row.pid, host_boot_id: row.host_boot_id, start_marker: row.start_marker }
    : null;
}

function statusRow(r: InstanceRow) {
  return {
    instance_id: r.instance_id,
    decision_id: r.decision_id,
    name: r.name,
    package_id: r.package_id,
    variant: r.variant,
    route: r.route,
    state: r.state,
    exit_code: r.exit_code,
    signal: r.signal,
    detail: r.detail,
    pid: r.pid,
    started_ms: r.started_ms,
    requester: r.requester,
    agent: r.agent,
    intent: r.intent,
    generation: r.generation,
  };
}

export const NODE_FILES = FILES;
export const newBootId = (): string => randomBytes(16).toString("hex");
