/**
 * From a leased node's death to its agent running elsewhere (issue 16 benchmark), against the floor the node lease's
 * argument allows (docs/concepts.md "The node lease", rule 5: the last stamped request + lease_ms + 11 s). Two real
 * `berth node serve` daemons, the controller and its keep loop (tick 300 ms, dead_after 1 s) in this process;
 * each round places one agent on the leased node, kills that daemon with SIGKILL (its agent stops itself by its
 * watchdog) and times until /proc shows the agent on the other node. Printed per round and as min/median/max, beside
 * the floor measured in the same round (the stamp is read from the store); never asserted.
 *
 *   npm run build:test && node dist/bench/controller/move.js [--rounds 3] [--lease-ms 3000]
 */
import { loadavg } from "node:os";
import { leaseWaitMs } from "../../src/core/mesh/lease.js";
import { startTargetWatch } from "../../src/serve/mesh/watch.js";
import { cleanupProcesses, processFixture } from "../../test/mesh-controller/support/processes.js";
import { liveAgents } from "../../test/support/live-agents.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
};
const ROUNDS = Number(flag("--rounds", "3")) || 3;
const LEASE_MS = Number(flag("--lease-ms", "3000")) || 3000;
const NAME = "bench-mover";

function runningOn(nodeId: string): boolean {
  return liveAgents(NAME).some((a) => a.node === nodeId);
}

async function round(): Promise<{ fromDeathMs: number; fromStampMs: number; floorMs: number }> {
  const fx = await processFixture({
    config: [undefined, { lease_ms: LEASE_MS }],
    script: "#!/bin/sh\nexec sleep 600\n",
  });
  try {
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    await ctl.addTarget(fx.proxy.address, "paired");
    await ctl.addTarget(fx.second.address, "paired");
    const r = await ctl.place({
      package: fx.pkgDir,
      name: NAME,
      config: { mode: "service" },
      restart: "always",
      prefer: [fx.second.nodeId],
    });
    if (r.placed?.node_id !== fx.second.nodeId) throw new Error(`not placed on the leased node: ${r.explain}`);
    ctl.lead({ address: null });
    while (!ctl.isLeader()) await new Promise((res) => setTimeout(res, 50));
    const watch = startTargetWatch(ctl, 300, () => undefined);
    await fx.second.kill9();
    const died = Date.now();
    while (!runningOn(fx.first.nodeId)) {
      if (Date.now() - died > 120_000) throw new Error("the agent did not run elsewhere within 120 s");
      await new Promise((res) => setTimeout(res, 50));
    }
    const ran = Date.now();
    await watch.stop();
    const stamp = (await ctl.stamps.of(fx.second.nodeId)).last_sent_ms ?? died;
    return { fromDeathMs: ran - died, fromStampMs: ran - stamp, floorMs: leaseWaitMs(LEASE_MS) };
  } finally {
    await cleanupProcesses();
  }
}

const rows: Array<{ fromDeathMs: number; fromStampMs: number; floorMs: number }> = [];
for (let i = 0; i < ROUNDS; i++) {
  const r = await round();
  rows.push(r);
  console.log(
    `round ${i + 1}: death → running elsewhere ${r.fromDeathMs} ms; last stamp → running ${r.fromStampMs} ms; floor (lease_ms + 11 s) ${r.floorMs} ms; over the floor ${r.fromStampMs - r.floorMs} ms`,
  );
}
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const stats = (xs: number[]) => {
  const s = sorted(xs);
  return `min ${s[0]} / median ${s[Math.floor(s.length / 2)]} / max ${s[s.length - 1]} ms`;
};
console.log(
  `lease_ms ${LEASE_MS}, ${ROUNDS} rounds, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log(`death → running elsewhere: ${stats(rows.map((r) => r.fromDeathMs))}`);
console.log(
  `last stamp → running elsewhere: ${stats(rows.map((r) => r.fromStampMs))} against the floor ${leaseWaitMs(LEASE_MS)} ms (ratio ${(sorted(rows.map((r) => r.fromStampMs))[Math.floor(rows.length / 2)]! / leaseWaitMs(LEASE_MS)).toFixed(2)}×)`,
);
