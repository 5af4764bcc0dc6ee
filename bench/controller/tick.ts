/**
 * The lifecycle tick's cost per node (issue 16 benchmark): one tick of `berth serve` = a signed describe of every
 * target (facts accepted, liveness recorded) plus one reconcile pass (one signed status per node holding a placement,
 * each placement judged), at 3, 30 and 100 node daemons in this process behind the in-process connector, one placed
 * instance per node. Printed as milliseconds per tick and per node, and the per-node cost as a ratio to the 3-node
 * figure measured in the same run (the floor). Figures are printed, never asserted.
 *
 *   npm run build:test && node dist/bench/controller/tick.js [--sizes 3,30,100] [--ticks 5]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { ReconcileLoop } from "../../src/mesh/controller/reconcile-loop.js";
import { meshReconcilePorts } from "../../src/mesh/controller/reconcile-ports.js";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { MemoryConnector } from "../../src/mesh/transport/memory.js";
import { probePackage, TEST_PERMIT } from "../../test/mesh-controller/support/package.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
};
const SIZES = flag("--sizes", "3,30,100").split(",").map(Number);
const TICKS = Number(flag("--ticks", "5")) || 5;

const writeJson = (path: string, value: unknown) => writeFileSync(path, JSON.stringify(value), { mode: 0o600 });

async function measure(nodes: number): Promise<number> {
  const root = mkdtempSync(join(tmpdir(), "berth-bench-tick-"));
  const key = generateSigningKey();
  const signer = generateSigningKey();
  const pkgDir = join(root, "pkg");
  probePackage(pkgDir, signer);
  const memory = new MemoryConnector();
  const daemons: NodeDaemon[] = [];
  for (let i = 0; i < nodes; i++) {
    const dataDir = join(root, `n${i}`);
    saveKeyFile(join(dataDir, "node.key"), generateSigningKey());
    writeJson(join(dataDir, "node.json"), { name: `n${i}`, controllers: [{ key: key.publicKey }], board: "pi5", lease_ms: 60_000 });
    writeJson(join(dataDir, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
    writeJson(join(dataDir, "permits.json"), [TEST_PERMIT]);
    const d = await NodeDaemon.start({ dataDir, listen: null, version: "bench", allowRootAgents: true, pollMs: 1_000 });
    daemons.push(d);
    memory.register(`n${i}`, (stream) => void d.service.serve(stream));
  }
  const controllerDir = join(root, "controller");
  const controller = await MeshController.open({ dataDir: controllerDir, key, connector: memory });
  writeJson(join(controllerDir, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
  writeJson(join(controllerDir, "permits.json"), [TEST_PERMIT]);
  for (let i = 0; i < nodes; i++) await controller.addTarget(`mem://n${i}`, "paired");
  for (const d of daemons) await controller.place({ package: pkgDir, name: `a-${d.nodeId.slice(0, 8)}`, config: { mode: "service" }, pin: d.nodeId });
  const loop = new ReconcileLoop(meshReconcilePorts(controller.reconcileAccess(), () => true));
  await controller.watchTargets();
  await loop.pass(); // warm-up
  const start = process.hrtime.bigint();
  for (let t = 0; t < TICKS; t++) {
    await controller.watchTargets();
    const report = await loop.pass();
    if (report.judged !== nodes) throw new Error(`a pass judged ${report.judged} placements, not ${nodes}`);
  }
  const perTickMs = Number(process.hrtime.bigint() - start) / 1e6 / TICKS;
  for (const p of await controller.placements()) await controller.instance("unload", p.instance_id);
  await controller.close();
  for (const d of daemons) await d.close();
  rmSync(root, { recursive: true, force: true });
  console.log(`  ${String(nodes).padStart(4)} nodes: ${perTickMs.toFixed(1).padStart(8)} ms per tick, ${(perTickMs / nodes).toFixed(2).padStart(6)} ms per node`);
  return perTickMs / nodes;
}

async function main(): Promise<void> {
  console.log(`lifecycle tick (describe every target + one reconcile pass), ${TICKS} ticks per size:`);
  const perNode: number[] = [];
  for (const n of SIZES) perNode.push(await measure(n));
  const floor = perNode[0] ?? 1;
  for (const [i, n] of SIZES.entries()) console.log(`  per-node cost at ${n} nodes / at ${SIZES[0]} nodes: ${((perNode[i] ?? 0) / floor).toFixed(2)}×`);
}

await main();
