/**
 * One placement's cost as the cluster grows (issue 19): placements through `MeshController.place` (refresh, gate,
 * engine, chained decision, the signed place, spawn on the node, placement committed) at 3 and 100 node daemons in
 * this process behind the in-process connector. Two ways in the same run, interleaved per placement:
 * - "every target described first": `refreshTargets()` just before each placement, what §9.2 step 3 did for every
 *   placement before issue 19 (a signed describe of every target);
 * - "facts reused": the placement as it now runs, reusing facts this process accepted less than 10 s ago.
 * Printed as ms per placement and the 100-node figure as a ratio to the 3-node one (target ≤ 2×). Never asserted.
 *
 *   npm run build:test && node dist/bench/controller/place-scale.js [--sizes 3,100] [--placements 10]
 */
import { inProcessMesh } from "../support/in-process-mesh.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
};
const SIZES = flag("--sizes", "3,100").split(",").map(Number);
const PLACEMENTS = Number(flag("--placements", "10")) || 10;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function measure(nodes: number): Promise<{ described: number; reused: number }> {
  const { controller, pkgDir, close } = await inProcessMesh({ nodes, tmpPrefix: "berth-bench-place-scale-" });
  const described: number[] = [];
  const reused: number[] = [];
  const place = async (name: string) => {
    const r = await controller.place({ package: pkgDir, name, config: { mode: "service" } });
    if (r.placed === null) throw new Error(`not placed: ${r.explain}`);
  };
  await place("warm-up");
  for (let i = 0; i < PLACEMENTS; i++) {
    let start = process.hrtime.bigint();
    await controller.refreshTargets();
    await place(`d-${i}`);
    described.push(Number(process.hrtime.bigint() - start) / 1e6);
    start = process.hrtime.bigint();
    await place(`r-${i}`);
    reused.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  await close();
  const out = { described: median(described), reused: median(reused) };
  console.log(
    `  ${String(nodes).padStart(4)} nodes: ${out.described.toFixed(1).padStart(8)} ms every target described first, ${out.reused.toFixed(1).padStart(8)} ms facts reused (medians of ${PLACEMENTS})`,
  );
  return out;
}

async function main(): Promise<void> {
  console.log(`one placement (in process, real daemons behind the in-process connector) as the cluster grows:`);
  const results = [];
  for (const n of SIZES) results.push(await measure(n));
  const floor = results[0] as { described: number; reused: number };
  for (const [i, n] of SIZES.entries()) {
    const r = results[i] as { described: number; reused: number };
    console.log(
      `  at ${n} nodes / at ${SIZES[0]} nodes: ${(r.described / floor.described).toFixed(2)}× every target described, ${(r.reused / floor.reused).toFixed(2)}× facts reused (target ≤ 2×)`,
    );
  }
}

await main();
