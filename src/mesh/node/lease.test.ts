/**
 * The node lease's deadline on a disk that cannot take its record (issue 37 finding B): the deadline the daemon
 * enforces, the one node_meta keeps for a restarted daemon and the one each watchdog reads move together or not at all.
 */
import { describe, expect, it } from "vitest";
import type { NodeContext } from "./context.js";
import { Refusal } from "./context.js";
import { NodeLeases } from "./lease.js";

const LEASE_MS = 15_000;

function fakeNode() {
  let now = 1_000_000;
  let full = false;
  const meta = new Map<string, string>();
  const watchdog = new Map<string, number>();
  const ctx = {
    o: { clock: () => now },
    store: {
      meta: (key: string) => meta.get(key),
      setMeta: (_tx: unknown, key: string, value: string) => meta.set(key, value),
      commit: (write: (tx: unknown) => unknown) => {
        if (full) throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
        return (write({}) as { result: unknown }).result;
      },
      instances: () => [{ instance_id: "i1", state: "running", requester: "c1" }],
    },
    runtime: { writeLeaseDeadline: (id: string, deadline: number) => watchdog.set(id, deadline) },
    log: { warn: () => undefined, info: () => undefined },
    stopping: new Set<string>(),
  } as unknown as NodeContext;
  return {
    leases: new NodeLeases(ctx, LEASE_MS),
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
    fill: (on: boolean) => {
      full = on;
    },
    persisted: () => (JSON.parse(meta.get("lease_deadlines") ?? "{}") as Record<string, number>).c1,
    watchdog: () => watchdog.get("i1"),
  };
}

describe("the node lease on a full disk", () => {
  it("a renewal that cannot be persisted is refused disk_full and moves no deadline: not the daemon's, not node_meta's, not the watchdog's", () => {
    const n = fakeNode();
    n.leases.admit("c1", n.now());
    const first = n.leases.deadlineOf("c1");
    expect(first).toBe(n.now() + LEASE_MS);
    expect(n.persisted()).toBe(first);
    expect(n.watchdog()).toBe(first);

    n.fill(true);
    n.advance(5_000);
    let refusal: unknown = null;
    try {
      n.leases.admit("c1", n.now());
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(Refusal);
    expect((refusal as Refusal).code).toBe("disk_full");
    expect(n.leases.deadlineOf("c1")).toBe(first);
    expect(n.persisted()).toBe(first);
    expect(n.watchdog()).toBe(first);

    // Room again: the next renewal moves all three together.
    n.fill(false);
    n.advance(1_000);
    n.leases.admit("c1", n.now());
    expect(n.leases.deadlineOf("c1")).toBe(n.now() + LEASE_MS);
    expect(n.persisted()).toBe(n.now() + LEASE_MS);
    expect(n.watchdog()).toBe(n.now() + LEASE_MS);
  });
});
