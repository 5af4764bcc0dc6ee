/**
 * Issue 37 (F5): `berth serve` says when a node stops answering and when it answers again. A node is recorded
 * unreachable by the first contact that failed — a refused connection at once, and a node that takes the connection
 * and the handshake but never answers once that contact's timeout has passed (one call timeout: the node client asks
 * a silent warm connection no second time, node-client.ts) — and judged `suspect`, then `dead` after `dead_after`
 * (core/mesh/node-liveness.ts). Each change is one log line here, on every server (leader or standby), beside the
 * `berth_nodes{liveness}` gauge and `berth nodes list`; what happens to its agents is the keep loop's: held
 * while the node is suspect, and moved only once it is dead and its lease has certainly run out (never without one).
 * A leased node that answers nothing for half its lease is sent nothing that could renew that lease, only probes that
 * cannot (core/mesh/silent-node.ts), so its lease does run out even when every request would have reached it.
 *
 * Shell: a timer that reads the store (the targets' recorded contacts; no node is contacted) and `livenessChanges`,
 * which is pure.
 */
import type { Liveness } from "../../core/placement/inputs.js";
import type { TargetInfo } from "../../mesh/controller/targets.js";

export interface LivenessChange {
  readonly node: string | null;
  readonly addr: string;
  readonly name: string | null;
  readonly from: Liveness;
  readonly to: Liveness;
  readonly unreachable_since_ms: number | null;
  readonly error: string | null;
}

/**
 * What changed since the last look, and what to remember. A target seen for the first time is remembered, not
 * reported (a server starting beside a dead node says nothing until it changes); `unknown` → `alive` (a first answer)
 * is no news either.
 */
export function livenessChanges(
  seen: ReadonlyMap<string, Liveness>,
  targets: readonly Pick<TargetInfo, "addr" | "node_id" | "name" | "liveness" | "unreachable_since_ms" | "error">[],
): { readonly changes: LivenessChange[]; readonly seen: Map<string, Liveness> } {
  const next = new Map<string, Liveness>();
  const changes: LivenessChange[] = [];
  for (const t of targets) {
    const key = t.node_id ?? t.addr;
    const before = seen.get(key);
    next.set(key, t.liveness);
    if (before === undefined || before === t.liveness || (before === "unknown" && t.liveness === "alive")) continue;
    changes.push({
      node: t.node_id,
      addr: t.addr,
      name: t.name,
      from: before,
      to: t.liveness,
      unreachable_since_ms: t.unreachable_since_ms,
      error: t.error,
    });
  }
  return { changes, seen: next };
}

/** The log line of a change: a warning when the node stopped answering, information when it answers again. */
export function livenessMessage(c: LivenessChange): { readonly level: "warn" | "info"; readonly message: string } {
  const who = `node ${c.name ?? c.node ?? c.addr}`;
  if (c.to === "suspect" || c.to === "dead") {
    const what =
      c.unreachable_since_ms === null
        ? "it has not been asked for a while"
        : `its last contact was not answered (${c.error ?? "no answer"})`;
    return {
      level: "warn",
      message: `${who} is ${c.to}: ${what}; its agents are held, and one with a lease is moved only once the node is dead and its lease has certainly run out`,
    };
  }
  return { level: "info", message: `${who} is ${c.to} again` };
}

export interface LivenessAlerts {
  stop(): void;
}

export function startLivenessAlerts(
  read: () => Promise<readonly TargetInfo[]>,
  o: { readonly everyMs: number; readonly onChange: (change: LivenessChange) => void },
): LivenessAlerts {
  let seen = new Map<string, Liveness>();
  let looking = false;
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    read()
      .then((targets) => {
        const r = livenessChanges(seen, targets);
        seen = r.seen;
        for (const c of r.changes) o.onChange(c);
      })
      .catch(() => undefined) // a store that does not answer now: looked at again next time
      .finally(() => {
        looking = false;
      });
  }, o.everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
