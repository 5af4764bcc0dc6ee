import { afterEach, describe, expect, it } from "vitest";
import { type LeaseKeeper, startLeaseKeeper } from "./lease-keeper.js";

let keeper: LeaseKeeper | null = null;
afterEach(async () => {
  await keeper?.stop();
  keeper = null;
});

async function until(what: string, ok: () => boolean, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("the node lease keeper every berth serve runs (issue 37, F1)", () => {
  it("renews every leased node each round, rounds paced by the shortest lease rather than the tick", async () => {
    const renewed: string[] = [];
    const rounds: Array<number | null> = [];
    keeper = startLeaseKeeper(
      {
        leasedNodes: async () => [
          { node_id: "short", lease_ms: 1_200 },
          { node_id: "long", lease_ms: 600_000 },
        ],
        renewNodeLease: async (id) => {
          renewed.push(id);
          return true;
        },
      },
      { tickMs: 3_600_000, onRound: (r) => rounds.push(r.every_ms), onError: (e) => Promise.reject(e) },
    );
    // With an hour's tick, a third round comes only from the shortest lease's cadence (a quarter of it).
    await until("three rounds", () => rounds.length >= 3);
    expect(new Set(rounds)).toEqual(new Set([300]));
    expect(renewed.filter((id) => id === "long").length).toBeGreaterThanOrEqual(2);
    expect(renewed.filter((id) => id === "short").length).toBeGreaterThanOrEqual(2);
  });

  it("a node that holds its answer is not asked again meanwhile, and never delays another node's renewals", async () => {
    const renewed: string[] = [];
    const held: Array<(answered: boolean) => void> = [];
    let answering = false;
    const missed: string[] = [];
    keeper = startLeaseKeeper(
      {
        leasedNodes: async () => [
          { node_id: "silent", lease_ms: 1_000 },
          { node_id: "alive", lease_ms: 1_000 },
        ],
        renewNodeLease: (id) => {
          renewed.push(id);
          if (id === "alive" || answering) return Promise.resolve(true);
          return new Promise<boolean>((r) => {
            held.push(r);
          });
        },
      },
      { tickMs: 3_600_000, onMissed: (id) => missed.push(id), onError: (e) => Promise.reject(e) },
    );
    await until("the answering node renewed four times", () => renewed.filter((id) => id === "alive").length >= 4);
    expect(renewed.filter((id) => id === "silent")).toEqual(["silent"]);
    held[0]?.(false);
    await until("the silent node's missed renewal told", () => missed.length === 1);
    await until("the silent node asked again", () => renewed.filter((id) => id === "silent").length >= 2);
    expect(missed).toEqual(["silent"]);
    // From now on it answers, so stop() finds nothing held in flight.
    answering = true;
    for (const answer of held) answer(true);
  });

  it("a store with no leased node renews nothing and looks again at the tick", async () => {
    const rounds: Array<number | null> = [];
    let renewals = 0;
    keeper = startLeaseKeeper(
      {
        leasedNodes: async () => [],
        renewNodeLease: async () => {
          renewals++;
          return true;
        },
      },
      { tickMs: 3_600_000, onRound: (r) => rounds.push(r.every_ms), onError: (e) => Promise.reject(e) },
    );
    await until("the first round", () => rounds.length === 1);
    expect(rounds).toEqual([null]);
    expect(renewals).toBe(0);
  });
});
