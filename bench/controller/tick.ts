/**
 * The lifecycle tick's cost per node (issue 16 benchmark): one tick of `berth serve` = a signed describe of every
 * target (facts accepted, liveness recorded) plus one keep pass (one signed status per node holding a placement,
 * each placement judged), at 3, 30 and 100 node daemons in this process behind the in-process connector, one placed
 * instance per node. Printed as milliseconds per tick and per node, and the per-node cost as a ratio to the 3-node
 * figure measured in the same run (the floor). Figures are printed, never asserted.
 *
 *   npm run build:test && node dist/bench/controller/tick.js [--sizes 3,30,100] [--ticks 5]
 */
import { KeepLoop } from "../../src/serve/mesh/keep-loop.js";
import { meshKeepPorts } from "../../src/serve/mesh/keep-ports.js";
import { inProcessMesh } from "../support/in-process-mesh.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
};
const SIZES = flag("--sizes", "3,30,100").split(",").map(Number);
const TICKS = Number(flag("--ticks", "5")) || 5;

async function measure(nodes: number): Promise<number> {
  const { controller, daemons, pkgDir, close } = await inProcessMesh({
    nodes,
    tmpPrefix: "berth-bench-tick-",
    nodeConfig: { lease_ms: 60_000 },
  });
  for (const d of daemons)
    await controller.place({
      package: pkgDir,
      name: `a-${d.nodeId.slice(0, 8)}`,
      config: { mode: "service" },
      pin: d.nodeId,
    });
  const loop = new KeepLoop(meshKeepPorts(controller.keepAccess(), () => true));
  await controller.watchTargets();
  await loop.pass(); // warm-up
  const start = process.hrtime.bigint();
  for (let t = 0; t < TICKS; t++) {
    await controller.watchTargets();
    const report = await loop.pass();
    if (report.judged !== nodes) throw new Error(`a pass judged ${report.judged} placements, not ${nodes}`);
  }
  const perTickMs = Number(process.hrtime.bigint() - start) / 1e6 / TICKS;
  await close();
  console.log(
    `  ${String(nodes).padStart(4)} nodes: ${perTickMs.toFixed(1).padStart(8)} ms per tick, ${(perTickMs / nodes).toFixed(2).padStart(6)} ms per node`,
  );
  return perTickMs / nodes;
}

async function main(): Promise<void> {
  console.log(`lifecycle tick (describe every target + one keep pass), ${TICKS} ticks per size:`);
  const perNode: number[] = [];
  for (const n of SIZES) perNode.push(await measure(n));
  const floor = perNode[0] ?? 1;
  for (const [i, n] of SIZES.entries())
    console.log(`  per-node cost at ${n} nodes / at ${SIZES[0]} nodes: ${((perNode[i] ?? 0) / floor).toFixed(2)}×`);
}

await main();
