/**
 * What every method family of the node's host service shares (spec/mesh.md §11): the daemon's options, the store,
 * the policy reader and the gate, the bookkeeping of in-flight handlers and stopping instances, and the `Refusal` a
 * handler throws. One object per daemon, built by `NodeService` and passed to each family's functions.
 */
import type { NodeServiceOptions } from "./options.js";
import { nodeIdOf } from "../../core/crypto/ed25519.js";
import type { WorkloadContext } from "../../core/governance/gate.js";
import { type BodyOf, parseBody } from "../../core/protocol/bodies.js";
import type { RefusalCode } from "../../core/protocol/messages.js";
import { type NodeLog, silentNodeLog } from "./log.js";
import { NodePolicy } from "./policy.js";
import type { NativeRuntime } from "./runtime.js";
import type { InstanceRow, LaunchSpec, NodeStore } from "./store.js";

/** An expected refusal inside a handler; caught at the dispatch boundary and answered (never a crash). */
export class Refusal extends Error {
  constructor(
    readonly code: RefusalCode,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/**
 * What the node's handlers ask of the supervisor (issue 15, supervisor.ts). Set by `NodeService`; the no-op default
 * keeps a context without one (a unit test's) behaving as before supervision.
 */
export interface SupervisionHooks {
  /** A run of the instance ended and was recorded (`exited`/`lost`): decide per its restart policy. */
  ended(instanceId: string): void;
  /** Before an operator verb acts: no restart of the instance is pending or in progress once this resolves. */
  quiesce(instanceId: string): Promise<void>;
  /** The operator started the instance: it begins with a fresh restart budget. */
  operatorStarted(instanceId: string): void;
  /** Restarts since the operator last started it, per instance. */
  restartCounts(): ReadonlyMap<string, number>;
}

const UNSUPERVISED: SupervisionHooks = {
  ended: () => undefined,
  quiesce: async () => undefined,
  operatorStarted: () => undefined,
  restartCounts: () => new Map(),
};

export class NodeContext {
  readonly nodeId: string;
  readonly policy: NodePolicy;
  /** Instances whose group a handler is stopping: their exit is the handler's to record, not the exit listener's. */
  readonly stopping = new Set<string>();
  /** Nonces of place/load requests whose in-flight mark this daemon set and has not cleared yet. */
  readonly ownsInflight = new Set<string>();
  supervision: SupervisionHooks = UNSUPERVISED;
  /** Issue 16: the lease deadline a controller's instances run under, when the node has a lease (lease.ts sets it). */
  leaseDeadlineOf: ((controller: string) => number) | null = null;

  readonly log: NodeLog;

  constructor(readonly o: NodeServiceOptions) {
    this.nodeId = nodeIdOf(o.key.publicKey);
    this.log = o.log ?? silentNodeLog;
    this.policy = new NodePolicy(o, this.nodeId);
  }

  get store(): NodeStore {
    return this.o.store;
  }

  get runtime(): NativeRuntime {
    return this.o.runtime;
  }

  held(id: string): InstanceRow {
    const row = this.store.instance(id);
    if (!row) throw new Refusal("unknown_instance", `instance ${id} is not held by this node`);
    return row;
  }

  body<M extends "start" | "stop" | "unload" | "status" | "logs" | "place" | "revocations">(
    method: M,
    body: unknown,
  ): BodyOf<M> {
    const parsed = parseBody(method, body);
    if (!parsed.ok) throw new Refusal("invalid_request", parsed.error);
    return parsed.value;
  }

  /**
   * The gate's view of a loaded instance; a node has only native routes, so nothing it runs is emulated. The network
   * is the exposure the runtime really gives (issue 15: `none` only when a network namespace enforces it).
   */
  contextOf(l: LaunchSpec, packageId: string, agent: string): WorkloadContext {
    const network = this.runtime.confinement.exposure(l.network);
    return {
      kind: l.kind,
      package_trust: "pinned_signer",
      node_tier: this.o.config.self_tier,
      network,
      // Issue 33: a refusal says the package declared otherwise and why this node judges it so.
      ...(network === l.network ? {} : { network_declared: l.network }),
      secrets: l.secrets.length > 0,
      emulated: false,
      accelerator: null,
      cpu_millis: l.cpu_millis,
      refs: { package_id: packageId, signer_keys: l.signer_keys, file_hashes: l.file_hashes },
      agent,
    };
  }

  /** The gate's verdict on a verb over a held instance, refused (and chained by the gate) unless it permits. */
  permit(action: string, row: InstanceRow, requester: string): void {
    const verdict = this.policy.gate(action, this.contextOf(row.launch, row.package_id, requester));
    if (verdict.decision !== "permit") throw new Refusal("governance", `${action} denied: ${verdict.reason}`);
  }
}
