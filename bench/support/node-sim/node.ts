/**
 * One simulated node (issue 35): the node's side of the control protocol with its state in memory, so thousands of
 * them fit in one process. What crosses the wire is exactly what a `berth node serve` daemon sends and accepts:
 *
 * - every request is verified by berth's own §4.6 order (`core/protocol/verify.ts`: signature over the bytes as
 *   received, canonical JSON, exact members, target, boot, validity, nonce guard, authorised controller keys), and
 *   every answer is signed by the node's identity key (`core/protocol/sign.ts`) and bound to the request's nonce;
 * - describe answers carry facts signed with `berth.facts.v1` (`mesh/node/facts.ts` builds them), a rising sequence
 *   and the node's `lease_ms`;
 * - the store/epoch fence of issue 20 is judged by the core's `judgeAuthority`;
 * - the lease (spec/mesh.md §15) by the core's `judgeRenewal`/`leaseExpired`: a late request is refused `expired`,
 *   and the host's lease check stops every live instance of a controller whose deadline passed (`lease_stopped`);
 * - `place`/`load` fetch the manifest over the request's own connection (`mesh/node/content.ts` PackageFetcher),
 *   verify it against this node's trusted signers (`verifyParsedEnvelope`), fetch every pinned file it has not
 *   fetched before and check its size and sha256, then hold the instance.
 *
 * What is simulated: instances are rows in memory (no process, no cgroup, no workspace, no node.db, no node chain),
 * the node's governance gate permits everything (the controller's gate is real), and facts describe this host once
 * (probing `/proc` per describe of thousands of nodes would only measure the simulator).
 */
import { createHash } from "node:crypto";
import type { JsonObject } from "../../../src/core/crypto/canonical.js";
import type { SigningKey } from "../../../src/core/crypto/ed25519.js";
import { EMPTY_REVOCATIONS } from "../../../src/core/governance/policy.js";
import { judgeRenewal, leaseExpired, renewedDeadline } from "../../../src/core/mesh/lease.js";
import { judgeAuthority } from "../../../src/core/mesh/epoch-fence.js";
import { type ParsedEnvelope, parseEnvelope, verifyParsedEnvelope } from "../../../src/core/packages/manifest.js";
import { type InstanceStatusRow, parseBody } from "../../../src/core/protocol/bodies.js";
import {
  METHODS,
  MUTATING_METHODS,
  type Outcome,
  type RefusalCode,
  type SignedMessage,
  truncateUtf8,
} from "../../../src/core/protocol/messages.js";
import { NonceGuard } from "../../../src/core/protocol/nonce-guard.js";
import { signResponse } from "../../../src/core/protocol/sign.js";
import { type VerifiedRequest, verifyRequest } from "../../../src/core/protocol/verify.js";
import { PackageFetcher } from "../../../src/mesh/node/content.js";
import { buildFacts, signFacts } from "../../../src/mesh/node/facts.js";
import type { FrameStream } from "../../../src/mesh/transport/frames.js";

/** The states a lease stop concerns (mesh/node/lease.ts LIVE_STATES). */
const LIVE = new Set(["running", "starting", "unhealthy"]);

/** A held instance: the row a status answer lists (`restarts` stays 0: the simulator restarts nothing). */
export type SimInstance = InstanceStatusRow;

export interface SimNodeConfig {
  readonly name: string;
  readonly board: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Controller keys this node serves (node.json `controllers`). */
  readonly controllers: ReadonlySet<string>;
  /** Package signer keys it trusts (signers.json). */
  readonly signers: ReadonlySet<string>;
  readonly leaseMs: number | null;
}

class SimRefusal extends Error {
  constructor(
    readonly code: RefusalCode,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** Package bytes and parses shared by every simulated node of the process (each node still fetches once itself). */
export class SharedContent {
  readonly files = new Map<string, Buffer>();
  private readonly parses = new Map<string, ParsedEnvelope>();
  parsed(text: string): ParsedEnvelope {
    let p = this.parses.get(text);
    if (!p) {
      p = parseEnvelope(text);
      this.parses.set(text, p);
    }
    return p;
  }
}

export class SimNode {
  readonly nodeId: string;
  bootId: string;
  readonly instances = new Map<string, SimInstance>();
  private readonly byDecision = new Map<string, string>();
  private readonly guard = new NonceGuard(8192);
  private readonly deadlines = new Map<string, number>();
  private readonly bindings = new Map<string, { store_id: string; epoch: number }>();
  private readonly fetched = new Set<string>();
  private factsSeq = 0;
  private factsBase: JsonObject | null = null;
  /** Requests answered, by method (for the benchmarks' own accounting). */
  readonly served = new Map<string, number>();

  constructor(
    readonly key: SigningKey,
    nodeId: string,
    bootId: string,
    readonly config: SimNodeConfig,
    private readonly content: SharedContent,
    private readonly clock: () => number = Date.now,
  ) {
    this.nodeId = nodeId;
    this.bootId = bootId;
  }

  /** Verifies and runs one request (the daemon's `NodeService.handle`); the answer and whether to close. */
  async handle(signed: SignedMessage, stream: FrameStream): Promise<{ signed: SignedMessage; close: boolean }> {
    const now = this.clock();
    const verdict = verifyRequest(signed, {
      nodeId: this.nodeId,
      bootId: this.bootId,
      nowMs: now,
      authorised: this.config.controllers,
      guard: this.guard,
    });
    if (verdict.kind === "refused") {
      return {
        signed: this.answer(verdict.method, verdict.nonce, {
          status: "refused",
          code: verdict.code,
          reason: truncateUtf8(verdict.reason, 1024),
        }),
        close: !verdict.authenticated,
      };
    }
    const req = verdict.request;
    stream.markAuthenticated?.();
    let outcome: Outcome;
    try {
      this.admitLease(req);
      this.admitAuthority(req);
      outcome = { status: "ok", result: await this.dispatch(req, stream) };
    } catch (error) {
      const r =
        error instanceof SimRefusal ? error : new SimRefusal("runtime", `internal error: ${(error as Error).message}`);
      outcome = { status: "refused", code: r.code, reason: truncateUtf8(r.reason, 1024) };
    }
    this.served.set(req.method, (this.served.get(req.method) ?? 0) + 1);
    return { signed: this.answer(req.method, req.nonce, outcome), close: false };
  }

  private answer(method: string, nonce: string, outcome: Outcome): SignedMessage {
    return signResponse(this.key, { method, bootId: this.bootId, requestNonce: nonce, outcome }).signed;
  }

  private admitLease(req: VerifiedRequest): void {
    if (this.config.leaseMs === null) return;
    const verdict = judgeRenewal(req.issued_at_ms, this.clock(), this.config.leaseMs);
    if (verdict.kind === "late") throw new SimRefusal("expired", verdict.reason);
    const next = renewedDeadline(this.deadlines.get(req.requester) ?? null, verdict);
    if (next !== null) this.deadlines.set(req.requester, next);
  }

  private admitAuthority(req: VerifiedRequest): void {
    if (req.method === "rehome") return;
    const verdict = judgeAuthority(this.bindings.get(req.key) ?? null, req.authority, MUTATING_METHODS.has(req.method));
    if (verdict.kind === "refuse") throw new SimRefusal(verdict.code, verdict.reason);
    const change = verdict.change;
    if (change !== null)
      this.bindings.set(req.key, {
        store_id: change.store_id,
        epoch: change.kind === "bind" ? change.epoch : change.to,
      });
  }

  private async dispatch(req: VerifiedRequest, stream: FrameStream): Promise<JsonObject> {
    switch (req.method) {
      case "describe":
        return this.describe();
      case "place":
      case "load":
        return this.place(req, stream, req.method);
      case "start": {
        const row = this.held(this.body("start", req.body).instance_id);
        if (LIVE.has(row.state)) return { started: false, already: true };
        row.state = "running";
        row.started_ms = this.clock();
        row.detail = null;
        return { started: true, already: false };
      }
      case "stop": {
        const row = this.held(this.body("stop", req.body).instance_id);
        const already = !LIVE.has(row.state);
        if (!already) row.state = "stopped";
        return { stopped: !already, already, exit_code: row.exit_code, signal: already ? row.signal : "SIGTERM" };
      }
      case "unload": {
        const body = this.body("unload", req.body);
        const row = this.held(body.instance_id);
        if (body.generation !== undefined && body.generation !== row.generation) {
          throw new SimRefusal(
            "precondition_failed",
            `generation precondition failed: instance ${row.instance_id} is at generation ${row.generation}, not ${body.generation}`,
          );
        }
        this.instances.delete(row.instance_id);
        this.byDecision.delete(row.decision_id);
        return { unloaded: true };
      }
      case "status": {
        const body = this.body("status", req.body);
        if (body.instance_id !== null) return { row: { ...this.held(body.instance_id) } as unknown as JsonObject };
        return { rows: [...this.instances.values()].map((r) => ({ ...r }) as unknown as JsonObject) };
      }
      case "logs": {
        const row = this.held(this.body("logs", req.body).instance_id);
        return {
          stdout: "",
          stderr: "",
          truncated_stdout: false,
          truncated_stderr: false,
          state: row.state,
          exit_code: row.exit_code,
        };
      }
      default:
        throw new SimRefusal("unknown_method", `method ${req.method} is not one the simulator serves`);
    }
  }

  private body<M extends "start" | "stop" | "unload" | "status" | "logs" | "place">(method: M, body: unknown) {
    const parsed = parseBody(method, body);
    if (!parsed.ok) throw new SimRefusal("invalid_request", parsed.error);
    return parsed.value;
  }

  private held(instanceId: string): SimInstance {
    const row = this.instances.get(instanceId);
    if (!row) throw new SimRefusal("unknown_instance", `instance ${instanceId} is not held by this node`);
    return row;
  }

  private describe(): JsonObject {
    const now = this.clock();
    this.factsSeq++;
    if (this.factsBase === null) {
      this.factsBase = buildFacts({
        nodeId: this.nodeId,
        bootId: this.bootId,
        seq: 0,
        nowMs: now,
        ttlS: 600,
        name: this.config.name,
        board: this.config.board,
        labels: this.config.labels,
        interpreters: [],
        perf: [],
        instances: 0,
        leaseMs: this.config.leaseMs,
      });
    }
    const facts = {
      ...this.factsBase,
      boot_id: this.bootId,
      seq: this.factsSeq,
      issued_at_ms: now,
      instances: this.instances.size,
    };
    return {
      node_id: this.nodeId,
      boot_id: this.bootId,
      version: "node-sim",
      methods: [...METHODS],
      facts: signFacts(this.key, facts) as unknown as JsonObject,
      clock_ms: now,
    };
  }

  private async place(req: VerifiedRequest, stream: FrameStream, method: "place" | "load"): Promise<JsonObject> {
    const decisionId = req.decision_id as string;
    if (this.byDecision.has(decisionId))
      throw new SimRefusal(
        "invalid_request",
        `decision ${decisionId} already placed as ${this.byDecision.get(decisionId)}`,
      );
    const body = this.body("place", req.body);
    const fetcher = new PackageFetcher(stream, body.package_id, 30_000);
    let text: string;
    try {
      text = await fetcher.manifest();
    } catch (error) {
      throw new SimRefusal("fetch", (error as Error).message);
    }
    const verified = verifyParsedEnvelope(this.content.parsed(text), {
      expectedId: body.package_id,
      trustedSigners: this.config.signers,
      revocations: EMPTY_REVOCATIONS,
    });
    if (!verified.ok) throw new SimRefusal("verify", verified.error);
    const statement = verified.value.envelope.statement;
    const variant = statement.variants.find((v) => v.id === body.variant);
    if (!variant)
      throw new SimRefusal(
        "invalid_request",
        `body.variant ${body.variant} is not a variant of package ${statement.name}`,
      );
    for (const file of statement.files) {
      if (this.fetched.has(file.sha256)) continue;
      let bytes = this.content.files.get(file.sha256);
      if (!bytes) {
        const parts: Buffer[] = [];
        for (let offset = 0; offset < file.size; ) {
          const chunk = await fetcher.range("file", file.sha256, offset, Math.min(1024 * 1024, file.size - offset));
          if (chunk.length === 0) break;
          parts.push(chunk);
          offset += chunk.length;
        }
        bytes = Buffer.concat(parts);
        if (bytes.length !== file.size || createHash("sha256").update(bytes).digest("hex") !== file.sha256)
          throw new SimRefusal("verify", `file ${file.path} does not match its pinned size and sha256`);
        this.content.files.set(file.sha256, bytes);
      }
      this.fetched.add(file.sha256);
    }
    if (req.expires_at_ms <= this.clock())
      throw new SimRefusal("expired", "the request expired while it was being handled");
    const instanceId = `${body.name}-${createHash("sha256").update(`${decisionId}:${this.nodeId}`).digest("hex").slice(0, 12)}`;
    const row: SimInstance = {
      instance_id: instanceId,
      decision_id: decisionId,
      name: body.name,
      package_id: body.package_id,
      variant: variant.id,
      route: "native",
      state: method === "place" ? "running" : "loaded",
      exit_code: null,
      signal: null,
      detail: null,
      pid: null,
      started_ms: method === "place" ? this.clock() : null,
      requester: req.requester,
      agent: body.agent ?? null,
      intent: body.intent ?? null,
      generation: 0,
      restart_policy: body.restart ?? "never",
      restarts: 0,
    };
    this.hold(row);
    return {
      instance_id: instanceId,
      name: body.name,
      variant: variant.id,
      route: "native",
      package_id: body.package_id,
      state: row.state,
      pid: null,
      node_id: this.nodeId,
      generation: 0,
    };
  }

  /** Holds an instance as if it had been placed here (the benchmarks' fill; `place` ends here too). */
  hold(row: SimInstance): void {
    this.instances.set(row.instance_id, row);
    this.byDecision.set(row.decision_id, row.instance_id);
  }

  /**
   * The lease check (mesh/node/lease.ts, every 250 ms): every live instance of a controller whose deadline passed is
   * stopped and marked `lease_stopped`. A controller this node has no deadline for gets a fresh lease from now.
   */
  checkLeases(): number {
    if (this.config.leaseMs === null || this.instances.size === 0) return 0;
    const now = this.clock();
    let stopped = 0;
    for (const row of this.instances.values()) {
      if (!LIVE.has(row.state)) continue;
      let deadline = this.deadlines.get(row.requester);
      if (deadline === undefined) {
        deadline = now + this.config.leaseMs;
        this.deadlines.set(row.requester, deadline);
      }
      if (!leaseExpired(deadline, now)) continue;
      row.state = "lease_stopped";
      row.detail = `no valid request from controller ${row.requester} since its lease ran out at ${deadline} (lease_ms ${this.config.leaseMs})`;
      stopped++;
    }
    return stopped;
  }

  /** A daemon restart: a new boot id, the nonce guard and leases forgotten; instances kept (re-adopted). */
  reboot(bootId: string): void {
    this.bootId = bootId;
    this.deadlines.clear();
  }

  /** The machine died: nothing it ran survives. */
  wipe(): void {
    this.instances.clear();
    this.byDecision.clear();
  }

  /** How many of its instances are live, by name. */
  liveNames(): string[] {
    return [...this.instances.values()].filter((r) => LIVE.has(r.state)).map((r) => r.name);
  }
}
