/**
 * Issue 35, the keep pass at scale: one pass of `berth serve`'s keep loop (the loop of
 * src/serve/mesh/watch.ts, through the same ports) over every placement, with every node's status asked over
 * the real protocol (TLS 1.3, signed and verified) from simulated nodes (bench/support/node-sim), at
 * 100 nodes / 1,000 agents, 1,000 / 10,000 and 5,000 / 50,000 (ten agents per node).
 *
 * Per size it prints: the lifecycle tick's describe of every target, the first pass (connections cold), then
 * `--passes` warm passes (min / median / max), and the floor measured in the same run: the same signed status
 * round trip to every node over the same warm connections, 64 at a time, with nothing stored or judged — what the
 * protocol alone costs. The ratio is the pass's median over that floor. Across sizes, the fitted cost exponent of
 * the pass (log time on log agents; 1.0 is linear) and the controller's RSS. Also that every agent is live on
 * exactly one node after the passes (the nodes' own census). Figures are printed, never asserted.
 *
 *   bash scripts/bench scale/keep-pass                 (all three sizes; the largest takes long on a loaded machine)
 *   node dist/bench/scale/keep-pass.js --quick          (100/1,000 and 1,000/10,000)
 *   node dist/bench/scale/keep-pass.js --sizes 100x1000,1000x10000 --passes 5
 *
 * Target (issue 35): ≤ 1 s at 1,000 nodes / 10,000 agents, exponent ≤ 1.1 from 1,000 to 50,000 agents, controller
 * RSS ≤ 400 MiB at 50,000 agents (printed per size as a ratio to that target).
 */
import { loadavg } from "node:os";
import { randomBytes } from "node:crypto";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { KeepLoop } from "../../src/serve/mesh/keep-loop.js";
import { meshKeepPorts } from "../../src/serve/mesh/keep-ports.js";
import { numberFlag } from "../support.js";
import { bounded, exponent, scaleWorld, stats } from "./support/world.js";

const argv = process.argv.slice(2);
const sizesFlag = argv.includes("--sizes") ? argv[argv.indexOf("--sizes") + 1] : undefined;
const SIZES = (sizesFlag ?? (argv.includes("--quick") ? "100x1000,1000x10000" : "100x1000,1000x10000,5000x50000"))
  .split(",")
  .map((s) => s.split("x").map(Number) as [number, number]);
const PASSES = numberFlag("--passes", 3);
// Issue 35's memory row: the controller's RSS at 5,000 nodes / 50,000 agents, at most 400 MiB.
const RSS_TARGET_MIB = 400;

const seconds = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

interface Row {
  readonly nodes: number;
  readonly agents: number;
  readonly pass: number;
  readonly rssMiB: number;
  readonly floor: number;
}

async function measure(nodes: number, agents: number): Promise<Row> {
  console.log(`\n  ${nodes} nodes / ${agents} agents:`);
  const w = await scaleWorld({ nodes, agents, log: console.log });
  try {
    const loop = new KeepLoop(meshKeepPorts(w.controller.keepAccess(), () => true));
    let t = performance.now();
    await w.controller.watchTargets();
    console.log(`    describe of every target (the tick's first half)   ${seconds(performance.now() - t)}`);
    t = performance.now();
    let report = await loop.pass();
    console.log(
      `    first pass                                          ${seconds(performance.now() - t)}  (judged ${report.judged}, acted ${report.acted.length}, waiting ${report.waiting})`,
    );
    const passes: number[] = [];
    for (let i = 0; i < PASSES; i++) {
      t = performance.now();
      report = await loop.pass();
      passes.push(performance.now() - t);
      if (report.judged !== agents || report.acted.length !== 0)
        console.log(
          `    (pass ${i + 1}: judged ${report.judged}, acted ${report.acted.length}, alerts ${report.alerts.length})`,
        );
    }
    const p = stats(passes);
    // The floor: the same status to every node, signed and verified over the same warm connections, 64 at a time.
    const client = new NodeClient({ key: w.key, connector: w.connector });
    const refs = (await w.controller.targets()).filter((x) => x.node_id && x.key && x.boot_id);
    const floors: number[] = [];
    let failed = 0;
    for (let i = 0; i < PASSES; i++) {
      t = performance.now();
      await bounded(refs, 64, async (x) => {
        const r = await client.call(
          { addr: x.addr, nodeId: x.node_id as string, key: x.key, bootId: x.boot_id },
          "status",
          { instance_id: null, include_departed: false },
          { nonce: randomBytes(16).toString("hex") },
        );
        // Counted, not thrown: on a loaded machine a connect can time out (5 s) for the floor as for the pass.
        if (r.kind !== "ok") failed++;
      });
      floors.push(performance.now() - t);
    }
    const f = stats(floors);
    if (failed > 0) console.log(`    (${failed} floor statuses got no answer: ${refs.length * PASSES} asked)`);
    console.log(
      `    keep pass (warm) min / median / max            ${seconds(p.min)} / ${seconds(p.median)} / ${seconds(p.max)}`,
    );
    console.log(
      `    floor: ${refs.length} signed statuses, 64 at a time           ${seconds(f.min)} / ${seconds(f.median)} / ${seconds(f.max)}`,
    );
    console.log(`    ratio pass / floor (medians)                        ${(p.median / f.median).toFixed(2)}×`);
    const census = await w.sim.census();
    const copies = Object.values(census.live);
    const twice = copies.filter((c) => c > 1).length;
    const rssMiB = Math.round(process.memoryUsage().rss / 2 ** 20);
    console.log(
      `    nodes' census: ${Object.keys(census.live).length} agents live, ${twice} with two copies; simulator RSS ${census.rss_mb} MiB, controller RSS ${rssMiB} MiB`,
    );
    console.log(
      `    controller RSS / target (${RSS_TARGET_MIB} MiB)                   ${(rssMiB / RSS_TARGET_MIB).toFixed(2)}×`,
    );
    return { nodes, agents, pass: p.median, floor: f.median, rssMiB };
  } finally {
    await w.close();
  }
}

async function main(): Promise<void> {
  console.log(
    `keep pass at scale (issue 35), ${PASSES} warm passes per size; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const rows: Row[] = [];
  for (const [nodes, agents] of SIZES) rows.push(await measure(nodes, agents));
  console.log("\n  summary:");
  for (const r of rows)
    console.log(
      `    ${String(r.nodes).padStart(5)} nodes / ${String(r.agents).padStart(6)} agents: pass ${seconds(r.pass)}, floor ${seconds(r.floor)}, ratio ${(r.pass / r.floor).toFixed(2)}×; controller RSS ${r.rssMiB} MiB, ${(r.rssMiB / RSS_TARGET_MIB).toFixed(2)}× the ${RSS_TARGET_MIB} MiB target`,
    );
  if (rows.length >= 2) {
    console.log(
      `    cost exponent of the pass across sizes (log time / log agents): ${exponent(rows.map((r) => [r.agents, r.pass])).toFixed(2)} (target ≤ 1.1); of the floor: ${exponent(rows.map((r) => [r.agents, r.floor])).toFixed(2)}`,
    );
  }
  const at = rows.find((r) => r.nodes === 1000 && r.agents === 10_000);
  if (at)
    console.log(
      `    at 1,000 nodes / 10,000 agents: ${seconds(at.pass)} (target ≤ 1 s: ${at.pass <= 1000 ? "met" : "NOT met"})`,
    );
  console.log(
    `  load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
}

await main();
