/**
 * The node's policy as read at each use (spec/mesh.md §5.3, §7): trusted signers, permits and revocations re-read from
 * the data directory (they are small), `policy.load` chained whenever a file changed, and the gate evaluated over them
 * with every verdict from step 2 on chained (§7.7). Fails closed: an unreadable file has its fail-closed meaning.
 */
import type { EventDraft } from "../../core/chain/event.js";
import { evaluate, type GatePolicy, type GateVerdict, type WorkloadContext } from "../../core/governance/gate.js";
import type { PermitRule, RevocationList } from "../../core/governance/policy.js";
import { truncateUtf8 } from "../../core/protocol/messages.js";
import { mergeRevocations } from "../../core/node/revocation.js";
import { loadPermits, loadPushedRevocations, loadRevocations, loadSigners, type PolicyFile } from "../policy/files.js";
import type { NodeServiceOptions } from "./options.js";

export interface Policy {
  readonly signers: ReadonlySet<string>;
  readonly permits: readonly PermitRule[];
  /** Issue 33: why permits.json loaded no rule (the field named), or null when it loaded. */
  readonly permitsError: string | null;
  readonly revocations: RevocationList | null;
}

export class NodePolicy {
  private readonly policyHashes = new Map<string, string | null>();

  constructor(
    private readonly o: NodeServiceOptions,
    private readonly nodeId: string,
  ) {}

  authorisedControllers(): ReadonlySet<string> {
    return new Set([...this.o.config.controllers.map((c) => c.key), ...(this.o.extraControllers ?? [])]);
  }

  /** Re-reads the policy files and chains `policy.load` whenever one changed. */
  read(): Policy {
    const signers = loadSigners(this.o.dataDir);
    const permits = loadPermits(this.o.dataDir);
    const revocations = loadRevocations(this.o.dataDir);
    // Issue 33: the lists controllers pushed (`berth revoke`) are enforced with the node's own.
    const pushed = loadPushedRevocations(this.o.dataDir).map((p) => p.file);
    for (const f of [signers, permits, revocations, ...pushed] as PolicyFile<unknown>[]) this.notePolicy(f);
    return {
      signers: new Set([...(signers.loaded.ok ? signers.loaded.value : []), ...(this.o.extraSigners ?? [])]),
      permits: permits.loaded.ok ? permits.loaded.value : [],
      permitsError: permits.loaded.ok ? null : `${permits.file}: ${permits.loaded.error}`,
      revocations: mergeRevocations(
        revocations.loaded.ok ? revocations.loaded.value : null,
        pushed.map((p) => (p.loaded.ok ? p.loaded.value : null)),
      ),
    };
  }

  private notePolicy(f: PolicyFile<unknown>): void {
    const fingerprint = `${f.sha256}:${f.loaded.ok}`;
    if (this.policyHashes.get(f.file) === fingerprint) return;
    this.policyHashes.set(f.file, fingerprint);
    // Issue 33: said where the operator looks too, at the daemon's start and at every change, with the field named.
    if (!f.loaded.ok)
      this.o.log?.warn(
        { file: f.file, error: truncateUtf8(f.loaded.error, 512) },
        `${f.file} is invalid and loads nothing (fail closed): ${truncateUtf8(f.loaded.error, 512)}`,
      );
    this.o.store.append({
      source: "trust",
      kind: "policy.load",
      payload: {
        file: f.file,
        sha256: f.sha256,
        ok: f.loaded.ok,
        error: f.loaded.ok ? null : truncateUtf8(f.loaded.error, 512),
      },
    });
  }

  private gatePolicy(): GatePolicy {
    const pol = this.read();
    return {
      permits: pol.permits,
      permitsError: pol.permitsError,
      revocations: pol.revocations,
      thresholdMilli: this.o.config.gate.threshold_milli,
      builtinTeardown: this.o.config.gate.builtin_teardown,
      humanApproval: this.o.config.gate.human_approval,
    };
  }

  /** Every verdict from step 2 on is appended to the node chain (§7.7). */
  gate(action: string, ctx: WorkloadContext): GateVerdict {
    const { verdict, event } = this.judge(action, ctx);
    if (event) this.o.store.append(event);
    return verdict;
  }

  /**
   * The verdict and the chain event it owes (null for step 1), for a caller that appends it in its own next
   * transaction (issue 19: one fsynced commit fewer per gate); the caller must append it on every path.
   */
  judge(action: string, ctx: WorkloadContext): { verdict: GateVerdict; event: EventDraft | null } {
    const verdict = evaluate(action, ctx, this.gatePolicy(), this.nodeId);
    return {
      verdict,
      event: verdict.chain ? { source: "gate", kind: verdict.chainKind, payload: verdict.payload } : null,
    };
  }

  /** The gate's view of a request that never reached a known method (§4.6 check 15). */
  emptyContext(agent: string): WorkloadContext {
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
}
