/**
 * One placement through the controller in this process (issue 19: "placement in-process, 3 nodes ≤ 3× the floor")
 * beside the floor that placement cannot go under, measured in the same run and interleaved with it: a bare `spawn`
 * of the same agent entry, plus one signed control round trip to a node on a warm connection, plus one durable
 * SQLite commit in the controller's directory. A placement does all three and more: describes only stale targets,
 * chains the gate and the decision, sends the signed `place` (the node fetches the package over that connection,
 * verifies it, commits and spawns) and commits the placement. Figures are printed, never asserted.
 *
 *   npm run build:test && node dist/bench/mesh/place-floor.js [--nodes 3] [--placements 40]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { PolicyFiles } from "../../src/mesh/controller/policy.js";
import { preparePackage } from "../../src/mesh/controller/prepare.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";
import { numberFlag } from "../support.js";
import {
  BENCH_PERMITS,
  sleepPackage,
  startNodeProcess,
  stopNodeProcesses,
  writeJson,
} from "../support/node-processes.js";

const NODES = numberFlag("--nodes", 3);
const PLACEMENTS = numberFlag("--placements", 40);
const WARMUP = 3;

const root = mkdtempSync(join(tmpdir(), "berth-bench-place-floor-"));
const controllerKey = generateSigningKey();
const signer = generateSigningKey();
const daemons: ChildProcess[] = [];

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const quantile = (xs: readonly number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] as number;

async function millis(fn: () => Promise<unknown> | unknown): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** The floor's spawn: the same entry the package runs, until the child exists (then it is killed). */
async function bareSpawn(entry: string): Promise<number> {
  let child: ChildProcess | undefined;
  const ms = await millis(async () => {
    child = spawn(entry, [], { detached: true, stdio: "ignore" });
    await new Promise((resolve) => child?.once("spawn", resolve));
  });
  if (child?.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  return ms;
}

async function main(): Promise<void> {
  const pkgDir = sleepPackage(root, signer);
  const controllerDir = join(root, "controller");
  mkdirSync(controllerDir, { mode: 0o700 });
  writeJson(join(controllerDir, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
  writeJson(join(controllerDir, "permits.json"), BENCH_PERMITS);
  const nodes = await Promise.all(
    Array.from({ length: NODES }, (_, i) =>
      startNodeProcess({
        dataDir: join(root, `node-${i}`),
        name: `n${i}`,
        controllers: [controllerKey.publicKey],
        signer: signer.publicKey,
        board: "pi5",
        children: daemons,
      }),
    ),
  );
  const prepared = preparePackage(pkgDir, controllerDir, (await new PolicyFiles(controllerDir).read()).policy);
  if (!prepared.ok) throw new Error(prepared.error);
  const packageId = prepared.value.packageId;

  // The controller as `berth serve` runs it: warm connections to its nodes (ControllerConnector).
  const controller = await MeshController.open({
    dataDir: controllerDir,
    key: controllerKey,
    connector: new ControllerConnector({ identity: controllerKey }),
  });
  for (const n of nodes) {
    const r = await controller.addTarget(n.address, "paired");
    if (!r.ok) throw new Error(r.error);
  }
  // The floor's round trip: a signed status to one node on its own warm connection.
  const probe = new NodeClient({ key: controllerKey, connector: new ControllerConnector({ identity: controllerKey }) });
  const described = await probe.describe(nodes[0]?.address as string, null);
  if (described.kind !== "described") throw new Error(`describe: ${JSON.stringify(described)}`);
  const target: TargetRef = {
    addr: nodes[0]?.address as string,
    nodeId: described.nodeId,
    key: described.key,
    bootId: described.bootId,
  };
  // The floor's commit: one row, synchronous=FULL, on the controller's disk.
  const db = openDatabase(join(controllerDir, "floor.db"));
  db.exec("CREATE TABLE IF NOT EXISTS floor_commit (n INTEGER)");
  const insert = db.prepare("INSERT INTO floor_commit VALUES (?)");

  const ids: string[] = [];
  const place = async (i: number) => {
    const r = await controller.place({ package: packageId, name: `floor-${i}` });
    if (!r.placed) throw new Error(`placement ${i} not placed:\n${r.explain}`);
    ids.push(r.placed.instance_id);
  };
  const times = { place: [] as number[], spawn: [] as number[], roundTrip: [] as number[], commit: [] as number[] };
  console.log(
    `placement in-process vs its floor: ${NODES} node daemons on loopback, ${PLACEMENTS} placements, one at a time`,
  );
  // Interleaved, one of each per round, so a load drift on the shared machine hits the placement and its floor alike.
  for (let i = 0; i < PLACEMENTS + WARMUP; i++) {
    const round = {
      place: await millis(() => place(i)),
      spawn: await bareSpawn(join(pkgDir, "run.sh")),
      roundTrip: await millis(async () => {
        const r = await probe.call(target, "status", { instance_id: null, include_departed: false });
        if (r.kind !== "ok") throw new Error(JSON.stringify(r));
      }),
      commit: await millis(() => withWriteTx(db, () => insert.run(i))),
    };
    if (i < WARMUP) continue;
    for (const k of Object.keys(times) as Array<keyof typeof times>) times[k].push(round[k]);
  }
  const floor = median(times.spawn) + median(times.roundTrip) + median(times.commit);
  const row = (label: string, ms: number) => console.log(`  ${label.padEnd(52)} ${ms.toFixed(2).padStart(8)} ms`);
  row("placement, p50", median(times.place));
  row("placement, p90", quantile(times.place, 0.9));
  row("floor: bare spawn of the same entry, p50", median(times.spawn));
  row("floor: one signed status round trip, warm, p50", median(times.roundTrip));
  row("floor: one durable commit (synchronous=FULL), p50", median(times.commit));
  row("floor = spawn + round trip + commit", floor);
  console.log(
    `  ${"placement p50 / floor".padEnd(52)} ${(median(times.place) / floor).toFixed(2).padStart(8)}×  (target ≤ 3×)`,
  );

  for (const id of ids) await controller.instance("unload", id);
  db.close();
  await controller.close();
}

try {
  await main();
} finally {
  await stopNodeProcesses(daemons);
  rmSync(root, { recursive: true, force: true });
}
