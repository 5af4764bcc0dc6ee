/**
 * A candidate finding of the network world (issue 37, long run seed 1054: three agents on the leased node ended while
 * its disk was full, with no campaign kill and no event of the node's chain ending them), made deterministic here.
 *
 * The suspected mechanism (src/mesh/node/lease.ts `admit` → `persist`): a renewal moves the lease deadline in memory
 * first, then persists it (node_meta) and moves each instance's watchdog file (runtime.ts `writeLeaseDeadline`). On a
 * full disk the persist throws, so the watchdog files keep the old deadline while the daemon holds the renewed one:
 * the watchdogs kill the agents at the old deadline (+ the watchdog lag) though the daemon's lease is current, and the
 * daemon chains no lease stop for them.
 *
 * World: the network world with one `berth serve` (its leader renews every node's lease), nodes 0 and 1 cordoned so the
 * agent goes to the leased node 2, whose data directory (a 48 MiB tmpfs) is then filled to the last byte and kept full
 * for lease_ms + 10 s while the leader keeps renewing. The promise judged: a copy on the leased node ends only with its
 * lease stop chained (or not at all while its lease is renewed), and the daemon survives the full disk.
 *
 * Seen (2026-12-07, twice): the copy ends with no event of its node's chain, and the daemon exits with an uncaught
 * `SqliteError: database or disk is full` (SQLITE_FULL) thrown by `recordExit` (src/mesh/node/processes.ts) from the
 * runtime's process-exit listener: the exit of the copy cannot be recorded and the whole daemon dies. Fixed: the daemon
 * keeps a disk reserve it gives up when a write finds the disk full (disk-reserve.ts), a lease deadline moves only once
 * persisted (lease.ts `admit`), and no exit, lease stop, refusal or checkpoint that cannot be written ends the daemon.
 */
import { statfsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { attribute } from "./judge.js";
import { sh } from "./netns.js";
import { NetSampler, nodeEndings } from "./observe.js";
import { LEASED_NODE, makeNetWorld, NET_LEASE_MS, type NetWorld } from "./world.js";

let world: NetWorld | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the network world's candidate finding: a full disk on the leased node", { timeout: 300_000 }, () => {
  it("a full disk on the leased node: the daemon lives, refuses a new place disk_full, and the copy whose leader keeps renewing is not killed unrecorded", async () => {
    world = await makeNetWorld({ controllers: 1, engine: "sqlite" });
    const w = world;
    for (const i of [0, 1]) {
      const r = await w.berth(
        "node",
        "cordon",
        w.nodes[i]?.nodeId ?? "",
        "--reason",
        "repro: only the leased node takes agents",
        "--json",
      );
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
    w.writeAgents(1, 2);
    const d = await w.berth("deploy", w.specFile(1, 0), "--json");
    expect(d.code, d.stdout + d.stderr).toBe(0);
    const sampler = new NetSampler(w.prefix, new Map(w.nodes.map((n) => [n.nsInode, n.index])));
    const live = () => [
      ...new Set(
        attribute(sampler.sample().procs)
          .filter((a) => a.instance !== null && a.proc.node === LEASED_NODE)
          .map((a) => a.instance as string),
      ),
    ];
    const [first] = live();
    expect(first, "the agent runs on the leased node").toBeDefined();

    const node = w.nodes[LEASED_NODE];
    if (!node) throw new Error("no leased node");
    const fill = join(node.dataDir, "repro-fill");
    const s = statfsSync(node.dataDir);
    await sh("fallocate", ["-l", String(Number(s.bavail) * Number(s.bsize)), fill]);
    const filledAt = Date.now();
    // New work is refused with a code that says why, while what runs keeps running.
    const refused = await w.berth("deploy", w.specFile(1, 1), "--json");
    process.stdout.write(`deploy on the full node: ${refused.code} ${refused.stdout.slice(0, 400)}\n`);
    expect(refused.stdout + refused.stderr, "a place on the full node is refused disk_full").toMatch(
      /refused: the node's disk is full/,
    );
    const until = Date.now() + NET_LEASE_MS + 10_000;
    let gone: number | null = null;
    while (Date.now() < until && gone === null) {
      if (!live().includes(first as string)) gone = Date.now();
      await sleep(200);
    }
    await sh("rm", ["-f", fill]);
    const chained = nodeEndings(LEASED_NODE, node.dataDir).filter(
      (e) => e.kind === "node-event" && e.instance === first,
    );
    const daemonAlive = node.proc !== null && node.proc.exitCode === null && node.proc.signalCode === null;
    process.stdout.write(
      `copy ${first}: ${gone === null ? "still live" : `gone ${gone - filledAt} ms after the disk filled`}; daemon ${daemonAlive ? "alive" : `exited (${node.proc?.exitCode ?? node.proc?.signalCode})`}; node chain endings for it: ${JSON.stringify(chained)}\nnode 2 stderr: ${node.stderrTail.slice(-5000)}\n`,
    );
    // The daemon outlives a full disk (it refuses new work), and the copy either lives (its lease renewed) or ends with
    // a chained lease stop.
    expect(daemonAlive, "the node daemon exited on a full disk").toBe(true);
    expect(gone === null || chained.length > 0, "the copy ended with no event of its node's chain").toBe(true);
  });
});
