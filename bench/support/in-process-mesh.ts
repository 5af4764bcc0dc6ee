/**
 * The mesh the controller benchmarks run in this process (bench/controller/tick.ts, place-scale.ts): `nodes` real
 * node daemons behind the in-process connector, each trusting one controller key, one package signer and the test
 * permit, and a `MeshController` holding them all as paired targets, with a signed package ready to place (the probe
 * package unless `makePackage` builds another). `close()` unloads every placement (or those `unload` picks), closes
 * the controller and the daemons and removes the directory.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { MemoryConnector } from "../../src/mesh/transport/memory.js";
import { probePackage, TEST_PERMIT } from "../../test/mesh-controller/support/package.js";

export interface InProcessMesh {
  readonly controller: MeshController;
  readonly daemons: readonly NodeDaemon[];
  /** The signed probe package's directory. */
  readonly pkgDir: string;
  close(unload?: (p: { name: string }) => boolean): Promise<void>;
}

const writeJson = (path: string, value: unknown) => writeFileSync(path, JSON.stringify(value), { mode: 0o600 });

/** `nodeConfig` adds to (or overrides) each daemon's node.json: `{ name, controllers, board: "pi5" }`. */
export async function inProcessMesh(opts: {
  nodes: number;
  tmpPrefix: string;
  nodeConfig?: Record<string, unknown>;
  makePackage?: (dir: string, signer: ReturnType<typeof generateSigningKey>) => void;
}): Promise<InProcessMesh> {
  const root = mkdtempSync(join(tmpdir(), opts.tmpPrefix));
  const key = generateSigningKey();
  const signer = generateSigningKey();
  const pkgDir = join(root, "pkg");
  (opts.makePackage ?? probePackage)(pkgDir, signer);
  const memory = new MemoryConnector();
  const daemons: NodeDaemon[] = [];
  for (let i = 0; i < opts.nodes; i++) {
    const dataDir = join(root, `n${i}`);
    saveKeyFile(join(dataDir, "node.key"), generateSigningKey());
    writeJson(join(dataDir, "node.json"), {
      name: `n${i}`,
      controllers: [{ key: key.publicKey }],
      board: "pi5",
      ...opts.nodeConfig,
    });
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
  for (let i = 0; i < opts.nodes; i++) await controller.addTarget(`mem://n${i}`, "paired");
  return {
    controller,
    daemons,
    pkgDir,
    async close(unload = () => true) {
      for (const p of await controller.placements()) if (unload(p)) await controller.instance("unload", p.instance_id);
      await controller.close();
      for (const d of daemons) await d.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
