/**
 * The world every `bench/scale/` benchmark measures in (issue 35): a real `MeshController` on a SQLite home with its
 * real TLS connector (`ControllerConnector`), store, chain, gate and keep loop, and `nodes` simulated nodes
 * (bench/support/node-sim) that speak the real protocol over TLS 1.3 on loopback ports. Targets are added the way
 * `berth nodes add --key` adds them (a describe answered by the pinned key, chained `peer.add`).
 *
 * `agents` placements are then recorded: the first few through `MeshController.place` over the wire (the package
 * fetched and verified by the node), the rest the way a placement records them, through the store's own commit
 * functions (the decision event with its order, the stored order, the attempt, the placement and its `placed`
 * event, each its own transaction, chained) while the simulated node is told to hold the instance — the fill skips
 * the fsync of each commit (synchronous = OFF, restored to FULL before anything is measured), as
 * bench/controller/place-history.ts does. Ten thousand real placements at today's rate would take the run's hour.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentRegistry } from "../../../src/agents/registry.js";
import { canonicalJson } from "../../../src/core/crypto/canonical.js";
import { sha256 } from "../../../src/core/crypto/tagged.js";
import type { SigningKey } from "../../../src/core/crypto/ed25519.js";
import { observedInstanceOf } from "../../../src/core/mesh/instance-observation.js";
import { generateSigningKey, saveKeyFile } from "../../../src/keys/key-file.js";
import { ControllerConnector } from "../../../src/mesh/client/connector.js";
import { FAN_OUT, fanOut } from "../../../src/mesh/controller/fan-out.js";
import { MeshController } from "../../../src/mesh/controller/index.js";
import { PlaceOrderSchema } from "../../../src/mesh/controller/order.js";
import type { DecisionId, PlacementRecord, WorkloadRecord } from "../../../src/mesh/controller/store.js";
import { storedOrderOf } from "../../../src/mesh/controller/stored-order.js";
import { SqliteEngine } from "../../../src/store/sqlite-engine.js";
import { probePackage, TEST_KIND, TEST_PERMIT } from "../../../test/mesh-controller/support/package.js";
import { NodeSim, type SimInstance } from "../../support/node-sim/client.js";

export interface ScaleWorld {
  readonly root: string;
  /** The controller's home (keys, policy files, controller.db). */
  readonly home: string;
  readonly key: SigningKey;
  readonly connector: ControllerConnector;
  readonly controller: MeshController;
  readonly sim: NodeSim;
  readonly packageId: string;
  readonly pkgDir: string;
  /** Agent names, in placement order. */
  readonly names: string[];
  close(): Promise<void>;
}

const writeJson = (path: string, value: unknown) => writeFileSync(path, JSON.stringify(value), { mode: 0o600 });

export { fanOut as bounded } from "../../../src/mesh/controller/fan-out.js";

export async function scaleWorld(o: {
  nodes: number;
  agents: number;
  leaseMs?: number | null;
  placedOverTheWire?: number;
  /** Also remember each filled placement as a deployed mesh agent (the registry `berth agents` lists). */
  registry?: boolean;
  log?: (line: string) => void;
}): Promise<ScaleWorld> {
  const log = o.log ?? (() => undefined);
  const root = mkdtempSync(join(tmpdir(), "berth-bench-scale-"));
  const home = join(root, "home");
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const key = generateSigningKey();
  // Where the CLI and `berth serve` look for it (cli/paths.ts), so both can open this home after the fill.
  saveKeyFile(join(home, "keys", "controller.key"), key);
  const signer = generateSigningKey();
  const pkgDir = join(root, "pkg");
  probePackage(pkgDir, signer);
  writeJson(join(home, "signers.json"), [{ key: signer.publicKey, name: "bench" }]);
  writeJson(join(home, "permits.json"), [TEST_PERMIT]);
  const sim = await NodeSim.start({
    nodes: o.nodes,
    controllers: [key.publicKey],
    signers: [signer.publicKey],
    // An hour: leased nodes, as berth recommends, but a lease that cannot run out while a large fill is recorded
    // (with 60 s, every instance was lease-stopped by the time the fill ended, and the pass restarted them all).
    leaseMs: o.leaseMs === undefined ? 3_600_000 : o.leaseMs,
    processes: o.nodes >= 2_000 ? 2 : 1,
  });
  const connector = new ControllerConnector({ identity: key });
  const controller = await MeshController.open({ dataDir: home, key, connector });
  const t0 = performance.now();
  await fanOut(sim.nodes, FAN_OUT, async (n) => {
    const r = await controller.addTarget(n.addr, "paired", n.key);
    if (!r.ok) throw new Error(`adding ${n.addr}: ${r.error}`);
  });
  log(
    `    ${o.nodes} targets added (describe by the pinned key, peer.add chained) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  const prepared = await controller.registerPackage(pkgDir);
  if (!prepared.ok) throw new Error(`registering the package: ${prepared.error}`);
  const packageId = prepared.value.packageId;
  const names: string[] = [];
  const wire = Math.min(o.placedOverTheWire ?? (o.nodes >= 1_000 ? 1 : 3), o.agents);
  const t1 = performance.now();
  for (let i = 0; i < wire; i++) {
    const name = `agent-${i}`;
    const r = await controller.place({ package: pkgDir, name, config: { mode: "service" }, restart: "on-failure" });
    if (r.placed === null) throw new Error(`placing ${name}: ${r.explain.slice(0, 600)}`);
    names.push(name);
  }
  if (wire > 0) log(`    ${wire} placed over the wire in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
  const t2 = performance.now();
  await fill(controller, sim, packageId, wire, o.agents, names, o.registry === true ? pkgDir : null);
  log(`    ${o.agents - wire} placements recorded (fill) in ${((performance.now() - t2) / 1000).toFixed(1)} s`);
  return {
    root,
    home,
    key,
    connector,
    controller,
    sim,
    packageId,
    pkgDir,
    names,
    async close() {
      await controller.close();
      connector.closeWarm();
      await sim.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

const WORKLOAD = (packageId: string): WorkloadRecord => ({
  kind: TEST_KIND,
  network: "egress",
  secrets: false,
  cpu_millis: 0,
  memory_bytes: 0,
  labels: [],
  excludes: [],
  package_id: packageId,
  signer_keys: [],
  file_hashes: [],
});

async function fill(
  controller: MeshController,
  sim: NodeSim,
  packageId: string,
  from: number,
  to: number,
  names: string[],
  registryPkg: string | null,
): Promise<void> {
  const registry = registryPkg === null ? null : new AgentRegistry(controller.store);
  const { store } = controller;
  // The controller's engine is the riding wrapper (store/riding-engine.ts) around the SQLite engine.
  const inner = (store.engine as unknown as { inner?: unknown }).inner ?? store.engine;
  const sqlite = inner instanceof SqliteEngine ? inner : null;
  const variant = (await controller.placements())[0]?.variant ?? "x86_64-linux";
  const requester = controller.controllerId;
  sqlite?.db.pragma("synchronous = OFF");
  let rows: Array<SimInstance & { node_id: string }> = [];
  try {
    for (let i = from; i < to; i++) {
      const name = `agent-${i}`;
      const node = sim.nodes[i % sim.nodes.length]?.node_id as string;
      const order = PlaceOrderSchema.parse({
        package: packageId,
        name,
        config: { mode: "service" },
        restart: "on-failure",
      });
      const record = {
        package_id: packageId,
        name,
        config: { mode: order.config.mode, args: [], env: [] },
        config_sha256: sha256(canonicalJson(order.config)).toString("hex"),
        pin: order.pin,
        prefer: [],
        avoid: [],
        allow_emulated: order.allow_emulated,
        start: order.start,
        restart: order.restart,
      };
      const decisionId: DecisionId = await store.commitDecision({
        name,
        packageId,
        workload: WORKLOAD(packageId),
        dispatch: true,
        event: {
          source: "placement",
          kind: "workload.place",
          payload: {
            phase: "decision",
            backend: "mesh",
            name,
            package_id: packageId,
            dry_run: false,
            order: record,
            winner: node,
          },
        },
        refusal: (error) => ({
          source: "placement",
          kind: "workload.refuse",
          payload: { phase: "decision", name, error },
        }),
        withDispatching: (tx, id) => controller.moves.saveOrderIn(tx, id, storedOrderOf(order, packageId, name)),
      });
      await store.beginAttempt(decisionId, 1, node, variant);
      const instanceId = `${name}-${sha256(`${decisionId}:${node}`).toString("hex").slice(0, 12)}`;
      const placement: PlacementRecord = {
        instance_id: instanceId,
        name,
        node_id: node,
        decision_id: decisionId,
        variant,
        route: "native",
        package_id: packageId,
        placed_ms: Date.now(),
        adopted: false,
        pending: null,
      };
      await store.commitPlaced(decisionId, 1, placement, WORKLOAD(packageId), {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "placed", decision_id: decisionId, node, instance_id: instanceId },
      });
      if (registry) {
        const spec = `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: ${name} }\nspec:\n  target: mesh\n  package: ${registryPkg}\n`;
        await registry.remember({
          name,
          target: "mesh",
          spec_path: `/bench/${name}.yaml`,
          spec_text: spec,
          intent: sha256(spec).toString("hex"),
          deployed_ms: Date.now(),
        });
      }
      rows.push({
        node_id: node,
        instance_id: instanceId,
        decision_id: decisionId,
        name,
        package_id: packageId,
        variant,
        route: "native",
        state: "running",
        exit_code: null,
        signal: null,
        detail: null,
        pid: null,
        started_ms: Date.now(),
        requester,
        agent: null,
        intent: null,
        generation: 0,
        restart_policy: "on-failure",
        restarts: 0,
      });
      names.push(name);
      if (rows.length >= 1000) {
        await observed(store, rows);
        await sim.hold(rows);
        rows = [];
      }
    }
    await observed(store, rows);
    await sim.hold(rows);
  } finally {
    sqlite?.db.pragma("synchronous = FULL");
  }
}

/** Issue 35: the filled instances as a serve loop's pass would have recorded them (what the stored lists read). */
async function observed(
  store: MeshController["store"],
  rows: ReadonlyArray<SimInstance & { node_id: string }>,
): Promise<void> {
  const now = Date.now();
  await store.recordObservations(
    rows.map((r) =>
      observedInstanceOf(
        r.instance_id,
        r.node_id,
        { state: r.state, restarts: r.restarts ?? 0, pid: r.pid, started_ms: r.started_ms },
        now,
      ),
    ),
  );
}

/** Least-squares slope of log(y) on log(x): the cost exponent across sizes (1 = linear). */
export function exponent(points: ReadonlyArray<readonly [number, number]>): number {
  const xs = points.map(([x]) => Math.log(x));
  const ys = points.map(([, y]) => Math.log(y));
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    den += ((xs[i] as number) - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

export function stats(values: readonly number[]): { min: number; median: number; max: number } {
  const s = [...values].sort((a, b) => a - b);
  return {
    min: s[0] ?? Number.NaN,
    median: s[Math.floor(s.length / 2)] ?? Number.NaN,
    max: s[s.length - 1] ?? Number.NaN,
  };
}

export { saveKeyFile };
