/**
 * The node's host service (spec/mesh.md §4.6, §11): the dispatcher. It verifies every request in the spec's order,
 * routes it to its method family, and answers with a signed response; every refusal by a handler is chained, after
 * any rollback, in the transaction that clears the decision's in-flight mark (§11). The families, over one shared
 * `NodeContext`:
 *
 *   connection.ts  the connection loop          place.ts      place / load (§11.1)
 *   lifecycle.ts   start / stop / unload        status.ts     status / logs
 *   describe.ts    describe                     processes.ts  spawn, stop, exits
 *   revocation.ts  the revocation sweep         events.ts     chain events and refusals
 */
import { randomBytes } from "node:crypto";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { isMethod, METHODS, type Outcome, type SignedMessage, truncateUtf8 } from "../../core/protocol/messages.js";
import { NonceGuard } from "../../core/protocol/nonce-guard.js";
import { signResponse } from "../../core/protocol/sign.js";
import { type VerifiedRequest, verifyRequest } from "../../core/protocol/verify.js";
import type { FrameStream } from "../transport/frames.js";
import { FILES } from "./config.js";
import { Connections } from "./connection.js";
import { NodeContext, Refusal } from "./context.js";
import { ControllerBindings } from "./controller-binding.js";
import type { NodeServiceOptions } from "./options.js";
import { describe, persistedDescribeNonces } from "./describe.js";
import { NodeLeases } from "./lease.js";
import { RefusalChain, refusalEvent } from "./events.js";
import { start, stop, unload } from "./lifecycle.js";
import type { Policy } from "./policy.js";
import { onProcessExit, pollAdopted, recordExit, trimAllLogs } from "./processes.js";
import { RevocationSweep } from "./revocation.js";
import { acceptRevocations } from "./revocation-push.js";
import { logs, status } from "./status.js";
import type { InstanceRow } from "./store.js";
import { Supervisor } from "./supervisor.js";
import { ControllerWitness } from "./witness.js";

export type { NodeServiceOptions } from "./options.js";
export { identityOf } from "./processes.js";

export class NodeService {
  readonly nodeId: string;
  private readonly ctx: NodeContext;
  private readonly guard: NonceGuard;
  private readonly refusals: RefusalChain;
  private readonly uncleared = new Map<string, ReturnType<typeof refusalEvent>>();
  private readonly revocations: RevocationSweep;
  private readonly connections: Connections;
  /** Issue 15: restarts per policy and health checks; started by the daemon once recovery is done. */
  readonly supervisor: Supervisor;
  /** Issue 20: which store each controller key is bound to, and its highest leader epoch (controller-binding.ts). */
  private readonly bindings: ControllerBindings;
  /** Issue 38: the newest controller checkpoint this node holds per key (witness.ts). */
  private readonly witness: ControllerWitness;
  /** Issue 16: the node lease, when node.json sets `lease_ms`. */
  private readonly leases: NodeLeases | null;

  constructor(private readonly o: NodeServiceOptions) {
    this.ctx = new NodeContext(o);
    this.nodeId = this.ctx.nodeId;
    this.guard = new NonceGuard(o.config.limits.nonce_guard);
    // A describe's replay is refused across a restart by its persisted nonce (describe.ts), not by the boot id.
    for (const [nonce, expires] of persistedDescribeNonces(o.store, o.clock())) this.guard.record(nonce, expires);
    this.refusals = new RefusalChain(o.store, this.nodeId, o.clock);
    this.bindings = new ControllerBindings(o.store, this.nodeId, o.clock);
    this.witness = new ControllerWitness(o.store, this.nodeId, o.clock);
    this.revocations = new RevocationSweep(this.ctx);
    this.supervisor = new Supervisor(this.ctx);
    this.ctx.supervision = this.supervisor;
    this.leases = o.config.lease_ms === null ? null : new NodeLeases(this.ctx, o.config.lease_ms);
    this.leases?.attach();
    o.runtime.onExit((id, exit) => onProcessExit(this.ctx, id, exit));
    this.connections = new Connections(
      () => this.o.config.limits,
      (signed, stream) => this.handle(signed, stream),
    );
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
      authorised: this.ctx.policy.authorisedControllers(),
      guard: this.guard,
    });
    // Issue 12: an accepted request's connection keeps its slot (transport/admission.ts); any other may be evicted
    // (a replayed capture is refused from check 14 on and must not earn a slot).
    if (verdict.kind === "accepted") stream.markAuthenticated?.();
    if (verdict.kind === "refused") {
      this.ctx.log.info(
        { method: verdict.method, code: verdict.code, authenticated: verdict.authenticated },
        "request refused before dispatch",
      );
      if (verdict.authenticated)
        this.refusals.authenticated(
          "handle",
          verdict.code,
          verdict.reason,
          verdict.method,
          verdict.requester,
          verdict.decisionId,
        );
      else
        this.refusals.unauthenticated(
          verdict.code,
          verdict.reason,
          verdict.method,
          verdict.requester,
          verdict.decisionId,
        );
      const answer = this.answer(verdict.method, verdict.nonce, {
        status: "refused",
        code: verdict.code,
        reason: truncateUtf8(verdict.reason, 1024),
      });
      return { signed: answer, close: !verdict.authenticated };
    }
    const req = verdict.request;
    let outcome: Outcome;
    try {
      // Issue 16: a late request renews nothing and runs nothing (lease.ts); refused before the method's handler.
      this.leases?.admit(req.requester, req.issued_at_ms);
      const result = await this.dispatch(req, stream);
      outcome = { status: "ok", result };
    } catch (error) {
      const refusal =
        error instanceof Refusal
          ? error
          : new Refusal("runtime", `internal error: ${(error as Error).message ?? String(error)}`);
      const reason = truncateUtf8(refusal.reason, 1024);
      outcome = { status: "refused", code: refusal.code, reason };
      this.ctx.log.info(
        { method: req.method, code: refusal.code, reason, requester: req.requester, decision_id: req.decision_id },
        "request refused",
      );
      // §11: chained after any rollback, in the transaction that clears the decision's in-flight mark.
      const clearInflight = (req.method === "place" || req.method === "load") && this.ctx.ownsInflight.has(req.nonce);
      const store = this.o.store;
      const event = refusalEvent(
        this.nodeId,
        "handle",
        refusal.code,
        reason,
        req.method,
        req.requester,
        req.decision_id,
      );
      try {
        store.commit((tx) => {
          if (clearInflight && req.decision_id) store.deleteInflight(tx, req.decision_id);
          return { result: null, events: [event] };
        });
      } catch (error) {
        // Issue 37 finding B (campaign seed 1401): a refusal that cannot be chained (a full disk) is still answered. Its
        // decision's in-flight mark, which settle reads as "still handling", is cleared with the event at the next poll
        // that can write, not left until the daemon restarts.
        if (clearInflight && req.decision_id) this.uncleared.set(req.decision_id, event);
        this.ctx.log.warn(
          { method: req.method, code: refusal.code, err: (error as Error).message },
          "the refusal could not be chained; retried at the next poll",
        );
      }
    } finally {
      this.ctx.ownsInflight.delete(req.nonce);
    }
    return { signed: this.answer(req.method, req.nonce, outcome), close: false };
  }

  private dispatch(req: VerifiedRequest, stream: FrameStream): Promise<JsonObject> | JsonObject {
    const ctx = this.ctx;
    if (!isMethod(req.method)) {
      // §4.6: after check 15, an unknown method is submitted to the gate as workload.<method>, which denies it.
      ctx.policy.gate(`workload.${req.method}`, ctx.policy.emptyContext(req.requester));
      throw new Refusal("unknown_method", `method ${req.method} is not one of ${METHODS.join(", ")}`);
    }
    // Issue 20: a foreign store or a deposed leader is refused before any method runs.
    this.bindings.admit(req);
    // Issue 38: a checkpoint that does not extend the one this node witnessed from the key is refused (and chained).
    this.witness.admit(req);
    switch (req.method) {
      case "describe":
        // `witness` (loose in the describe result schema, so older controllers ignore it) says this node witnesses,
        // and which checkpoint of the requesting key it holds: the controller's next proof starts there.
        return { ...describe(ctx, req), witness: this.witness.describe(req.key) };
      case "place":
      case "load": {
        // Issue 37 finding B: a node whose disk filled takes no new work until it has room again (disk-reserve.ts).
        if (ctx.store.diskFull)
          throw new Refusal(
            "disk_full",
            `the node's disk is full: it refuses new work (${req.method}) until it has room again; what runs here keeps running`,
          );
        // Loaded at the first place (the manifest's schemas, verification, admission): an idle daemon never needs
        // them, and they would stay resident for its life (issue 19, src/mesh/node/README.md).
        const method = req.method;
        return import("./place.js").then(({ place }) => place(ctx, req, stream, method));
      }
      case "start":
        return start(ctx, req, ctx.body("start", req.body));
      case "stop":
        return stop(ctx, req, ctx.body("stop", req.body));
      case "unload":
        return unload(ctx, req, ctx.body("unload", req.body));
      case "status":
        return status(ctx, ctx.body("status", req.body));
      case "logs":
        return logs(ctx, ctx.body("logs", req.body));
      case "rehome":
        return this.bindings.rehome(req);
      case "revocations":
        // Issue 33: what the new list revokes is swept at once, not at the next periodic sweep.
        return acceptRevocations(ctx, req, ctx.body("revocations", req.body), () => {
          this.revocations
            .sweep()
            .catch((error: unknown) => ctx.log.warn({ err: (error as Error).message }, "revocation sweep failed"));
        });
      default: {
        const never: never = req.method;
        throw new Refusal("unknown_method", `method ${String(never)} is not handled`);
      }
    }
  }

  private answer(method: string, nonce: string, outcome: Outcome): SignedMessage {
    return signResponse(this.o.key, { method, bootId: this.o.bootId, requestNonce: nonce, outcome }).signed;
  }

  // -- what the daemon drives: exits, timers, policy ------------------------------------------------------------

  recordExit(
    row: InstanceRow,
    exitCode: number | null,
    signal: string | null,
    detail: string,
    state: "exited" | "lost" = "exited",
  ): void {
    recordExit(this.ctx, row, exitCode, signal, detail, state);
  }

  /** §13: trim every instance's logs over 1 MiB to the last 64 KiB (the daemon calls this every 10 s). */
  trimAllLogs(): void {
    trimAllLogs(this.ctx);
  }

  /** Instances re-adopted after a restart are not our children: poll their identity. */
  pollAdopted(): void {
    this.clearUncleared();
    pollAdopted(this.ctx);
  }

  /** In-flight marks of refused requests whose refusal could not be written yet, with their events (a full disk). */
  private clearUncleared(): void {
    const store = this.o.store;
    for (const [decisionId, event] of this.uncleared) {
      try {
        store.commit((tx) => {
          store.deleteInflight(tx, decisionId);
          return { result: null, events: [event] };
        });
        this.uncleared.delete(decisionId);
      } catch {
        return; // still no room: the next poll tries again
      }
    }
  }

  /** §11.4: stop and unload, without the gate, every instance whose package, signer or file is revoked. */
  sweepRevoked(): Promise<number> {
    return this.revocations.sweep();
  }

  /** Issue 16: stops the instances of every controller whose lease ran out (the daemon calls this every second). */
  checkLeases(): Promise<number> {
    return this.leases?.check() ?? Promise.resolve(0);
  }

  /** Re-reads the policy files and chains `policy.load` whenever one changed. Fails closed. */
  policy(): Policy {
    return this.ctx.policy.read();
  }
}

export const NODE_FILES = FILES;
export const newBootId = (): string => randomBytes(16).toString("hex");
