/**
 * One placement's cost as the placement history grows (issue 19): placements through `MeshController.place`
 * (facts reused, gate, the history read, engine, chained decision, signed place, spawn on the node, placement
 * committed) on 3 node daemons in this process behind the in-process connector, with 100 and then 10,000 placements
 * already recorded. The placements are recorded the way a placement records them (the store's own commitDecision,
 * beginAttempt and commitPlaced, each its own transaction, chained), placed an hour ago on the same nodes, a tenth of
 * them labelled (`batch`) so the label index is not empty; the filling connection skips the fsync of each commit
 * (synchronous = OFF, restored to FULL before measuring).
 *
 * The workload placed declares memory and excludes a label (`gpu-heavy`) no recorded placement carries, so a
 * decision reads the per-node totals, runs the label lookup, and reads the placements made since each node's facts
 * were issued (src/core/placement/history.ts), as every real decision of such a workload does.
 *
 * Printed: the median ms per placement at each size (placements interleaved with nothing else), the history read
 * alone (`store.placementHistory`), and the ratio of the largest size to the smallest (target ≤ 1.5×). Never
 * asserted.
 *
 *   bash scripts/bench controller/place-history   [--sizes 100,10000] [--placements 15] [--nodes 3]
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { historyReads } from "../../src/core/placement/index.js";
import type { generateSigningKey } from "../../src/keys/key-file.js";
import type { MeshController } from "../../src/mesh/controller/index.js";
import type { DecisionId, PlacementRecord, WorkloadRecord } from "../../src/mesh/controller/store.js";
import { buildPackage, initPackage, signPackage } from "../../src/mesh/packages/dir.js";
import { SqliteEngine } from "../../src/store/sqlite-engine.js";
import { hostArch, hostOs, TEST_KIND } from "../../test/mesh-controller/support/package.js";
import { numberFlag } from "../support.js";
import { inProcessMesh } from "../support/in-process-mesh.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? fallback) : fallback;
};
const SIZES = flag("--sizes", "100,10000").split(",").map(Number);
const PLACEMENTS = numberFlag("--placements", 15);
const NODES = numberFlag("--nodes", 3);

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

function makePackage(dir: string, signer: ReturnType<typeof generateSigningKey>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "run.sh"), "#!/bin/sh\nexec sleep 600\n");
  chmodSync(join(dir, "run.sh"), 0o755);
  initPackage(dir, {
    name: "history",
    kind: TEST_KIND,
    files: ["run.sh"],
    network: "egress",
    resources: { memory_mb: 16, cpu_millis: 100 },
    policy: { excludes: ["gpu-heavy"] },
    variants: [
      {
        id: `${hostArch()}-${hostOs()}`,
        arch: hostArch(),
        os: hostOs(),
        entry: { program: "run.sh", args: [] },
        requires: [],
      },
    ],
  });
  buildPackage(dir);
  signPackage(dir, signer);
}

const RECORDED = (i: number): WorkloadRecord => ({
  kind: TEST_KIND,
  network: "lan",
  secrets: false,
  cpu_millis: 100,
  memory_bytes: 64 * 2 ** 20,
  labels: i % 10 === 0 ? ["batch"] : [],
  excludes: [],
  package_id: "3f9c2a".padEnd(64, "0"),
  signer_keys: [],
  file_hashes: [],
});

/** Placements `from` … `to - 1`, recorded as a placement records them, an hour old, spread over `nodeIds`. */
async function record(controller: MeshController, nodeIds: readonly string[], from: number, to: number): Promise<void> {
  const { store } = controller;
  const sqlite = store.engine instanceof SqliteEngine ? store.engine : null;
  sqlite?.db.pragma("synchronous = OFF");
  try {
    for (let i = from; i < to; i++) {
      const name = `old-${i}`;
      const workload = RECORDED(i);
      const node = nodeIds[i % nodeIds.length] as string;
      const decisionId: DecisionId = await store.commitDecision({
        name,
        packageId: workload.package_id,
        workload,
        dispatch: true,
        event: {
          source: "placement",
          kind: "workload.place",
          payload: { phase: "decision", backend: "mesh", name, package_id: workload.package_id },
        },
        refusal: (error) => ({
          source: "placement",
          kind: "workload.refuse",
          payload: { phase: "decision", name, error },
        }),
      });
      await store.beginAttempt(decisionId, 1, node, "v");
      const placement: PlacementRecord = {
        instance_id: `${name}-${decisionId.slice(0, 12)}`,
        name,
        node_id: node,
        decision_id: decisionId,
        variant: "v",
        route: "native",
        package_id: workload.package_id,
        placed_ms: Date.now() - 3_600_000,
        adopted: false,
        pending: null,
      };
      await store.commitPlaced(decisionId, 1, placement, workload, {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "placed", decision_id: decisionId, node, instance_id: placement.instance_id },
      });
    }
  } finally {
    sqlite?.db.pragma("synchronous = FULL");
  }
}

async function main(): Promise<void> {
  const mesh = await inProcessMesh({ nodes: NODES, tmpPrefix: "berth-bench-place-history-", makePackage });
  const { controller, pkgDir } = mesh;
  const nodeIds = (await controller.targets()).map((t) => t.node_id).filter((id): id is string => id !== null);

  let placedHere = 0;
  const place = async (name: string) => {
    const r = await controller.place({ package: pkgDir, name, config: { mode: "service" } });
    if (r.placed === null) throw new Error(`not placed: ${r.explain}`);
    placedHere += 1;
  };
  await place("warm-up");

  console.log(
    `one placement (in process, ${NODES} real daemons behind the in-process connector) as the recorded placements grow; load ${(loadavg()[0] ?? 0).toFixed(2)}`,
  );
  const results: Array<{ size: number; place: number; read: number }> = [];
  let recorded = 0;
  for (const size of SIZES) {
    // The placements measured so far count too: the history holds `size` placements when each size's round starts.
    const target = size - placedHere;
    if (target > recorded) await record(controller, nodeIds, recorded, target);
    recorded = Math.max(recorded, target);
    const times: number[] = [];
    for (let i = 0; i < PLACEMENTS; i++) {
      const start = process.hrtime.bigint();
      await place(`at-${size}-${i}`);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    // The history read alone, as the last decision made it (its views, its request).
    const views = await controller.nodeViews();
    const reads = historyReads(
      {
        spec: {
          memory_bytes: 16 * 2 ** 20,
          policy: { min_tier: "paired", labels: [], excludes: ["gpu-heavy"], sticky: false },
        },
      },
      views,
    );
    const reading: number[] = [];
    for (let i = 0; i < 30; i++) {
      const start = process.hrtime.bigint();
      await controller.store.placementHistory(reads);
      reading.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    const out = { size, place: median(times), read: median(reading) };
    results.push(out);
    const rows = (await controller.placements()).length;
    console.log(
      `  ${String(rows).padStart(6)} placements recorded: ${out.place.toFixed(1).padStart(7)} ms per placement (median of ${PLACEMENTS}), the history read alone ${out.read.toFixed(2).padStart(6)} ms`,
    );
  }
  const first = results[0];
  const last = results[results.length - 1];
  if (first && last && first !== last) {
    const ratio = last.place / first.place;
    console.log(
      `  at ${last.size} / at ${first.size} recorded placements: ${ratio.toFixed(2)}× per placement (target ≤ 1.5×: ${ratio <= 1.5 ? "met" : "NOT met"}), ${(last.read / first.read).toFixed(2)}× the history read; load ${(loadavg()[0] ?? 0).toFixed(2)} at the end`,
    );
  }
  // The recorded ones ("old-…") have no process behind them: only what this run placed is unloaded.
  await mesh.close((p) => !p.name.startsWith("old-"));
}

await main();
