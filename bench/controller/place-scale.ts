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
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { MemoryConnector } from "../../src/mesh/transport/memory.js";
import { probePackage, TEST_PERMIT } from "../../test/mesh-controller/support/package.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
};
const SIZES = flag("--sizes", "3,100").split(",").map(Number);
const PLACEMENTS = Number(flag("--placements", "10")) || 10;

const writeJson = (path: string, value: unknown) => writeFileSync(path, JSON.stringify(value), { mode: 0o600 });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function measure(nodes: number): Promise<{ described: number; reused: number }> {
  const root = mkdtempSync(join(tmpdir(), "berth-bench-place-scale-"));
  const key = generateSigningKey();
  const signer = generateSigningKey();
  const pkgDir = join(root, "pkg");
  probePackage(pkgDir, signer);
  const memory = new MemoryConnector();
  const daemons: NodeDaemon[] = [];
  for (let i = 0; i < nodes; i++) {
    const dataDir = join(root, `n${i}`);
    saveKeyFile(join(dataDir, "node.key"), generateSigningKey());
    writeJson(join(dataDir, "node.json"), { name: `n${i}`, controllers: [{ key: key.publicKey }], board: "pi5" });
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
  for (const p of await controller.placements()) await controller.instance("unload", p.instance_id);
  await controller.close();
  for (const d of daemons) await d.close();
  rmSync(root, { recursive: true, force: true });
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
