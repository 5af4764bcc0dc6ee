/**
 * The node's revocation sweep (spec/mesh.md §11.4): stop and unload, without the gate, every instance whose package,
 * signer or file is revoked. Which subject names an instance is the core's `revokedSubject`.
 */
import { revokedSubject } from "../../core/node/revocation.js";
import type { NodeContext } from "./context.js";
import { identityOf } from "./processes.js";
import type { InstanceRow } from "./store.js";

/** The revoked subject naming a held instance, from its verified launch references. */
export function revokedSubjectOf(row: InstanceRow, revocations: Parameters<typeof revokedSubject>[1]): string | null {
  return revokedSubject(
    { package_id: row.package_id, signer_keys: row.launch.signer_keys, file_hashes: row.launch.file_hashes },
    revocations,
  );
}

export class RevocationSweep {
  private sweeping = false;

  constructor(private readonly ctx: NodeContext) {}

  /** One sweep at a time: overlapping sweeps would tear the same instance down twice. */
  async sweep(): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    try {
      const { store } = this.ctx;
      const pol = this.ctx.policy.read();
      let removed = 0;
      for (const row of store.instances()) {
        const subject = revokedSubjectOf(row, pol.revocations);
        // A row may have left since the list was read (an unload raced the sweep).
        // A row whose decision is still in flight is left to its handler (§11.1 step 12 re-checks revocations).
        if (subject === null || store.inflight(row.decision_id) || !store.instance(row.instance_id)) continue;
        if (await forcedTeardown(this.ctx, row, subject)) removed++;
      }
      return removed;
    } finally {
      this.sweeping = false;
    }
  }
}

/** Stops and unloads a revoked instance without asking the gate; chained as `phase: "forced"`. */
export async function forcedTeardown(ctx: NodeContext, row: InstanceRow, subject: string): Promise<boolean> {
  const { store, runtime } = ctx;
  const identity = identityOf(row);
  if (runtime.alive(row.instance_id, identity)) {
    ctx.stopping.add(row.instance_id);
    try {
      const stopped = await runtime.stop(row.instance_id, identity, 2000);
      if (!stopped.stopped) {
        store.commit((tx) => {
          store.updateInstance(tx, row.instance_id, {
            state: "failed",
            detail: `forced stop failed (${subject} revoked)`,
          });
          return { result: null, events: [] };
        });
        return false;
      }
    } finally {
      ctx.stopping.delete(row.instance_id);
    }
    store.append({
      source: "node",
      kind: "workload.stop",
      payload: { phase: "forced", instance_id: row.instance_id, subject },
    });
  }
  runtime.remove(row.instance_id);
  store.commit((tx) => {
    store.removeInstance(tx, row.instance_id, row.decision_id, `revoked: ${subject}`, ctx.o.clock());
    return {
      result: null,
      events: [
        {
          source: "node",
          kind: "workload.unload",
          payload: { phase: "forced", instance_id: row.instance_id, subject },
        },
      ],
    };
  });
  return true;
}
