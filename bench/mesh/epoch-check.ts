/**
 * The cost of issue 20's fence per node request: every request names its controller store and leader epoch, and the
 * node judges it against its binding for that key (src/mesh/node/controller-binding.ts) before any method runs.
 * Measured end to end in one process (an in-process node service behind the memory connector, so neither TCP nor
 * TLS hides the difference): signed `status` round trips carrying an authority (the check runs: binding lookup,
 * store and epoch compared) against the same calls carrying none (the check returns at once), interleaved in
 * batches so drift in the machine's load hits both alike, then the pure judgement alone. Figures, never asserted.
 * Run after `npm run build:test` (scripts/bench does).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { judgeAuthority } from "../../src/core/mesh/epoch-fence.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { initNodeDataDir } from "../../src/mesh/node/init.js";
import { MemoryConnector } from "../../src/mesh/transport/memory.js";
import { numberFlag, ratio } from "../support.js";

// Both ways together stay under the node's nonce guard (8192 unexpired nonces, §4.9) within one validity window.
const CALLS = numberFlag("--calls", 3000);
const BATCH = 200;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "berth-bench-epoch-"));
  const controller = generateSigningKey();
  const dataDir = join(dir, "node");
  initNodeDataDir(dataDir, { controllers: [controller.publicKey], signers: [], permits: [] });
  const daemon = await NodeDaemon.start({ dataDir, listen: null, version: "bench" });
  try {
    const memory = new MemoryConnector();
    const addr = memory.register("n", (stream) => void daemon.service.serve(stream));
    const store = { store_id: "a".repeat(32), epoch: 3 };
    const fenced = new NodeClient({ key: controller, connector: memory, authority: () => store });
    const bare = new NodeClient({ key: controller, connector: memory });
    const d = await fenced.describe(addr, null); // binds the key to the store
    if (d.kind !== "described") throw new Error(`describe failed: ${JSON.stringify(d)}`);
    const target: TargetRef = { addr, nodeId: d.nodeId, key: d.key, bootId: d.bootId };
    const body = { instance_id: null, include_departed: false };
    const timed = async (client: NodeClient, n: number): Promise<number> => {
      const start = process.hrtime.bigint();
      for (let i = 0; i < n; i++) {
        const r = await client.call(target, "status", body);
        if (r.kind !== "ok") throw new Error(JSON.stringify(r));
      }
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    await timed(fenced, 100);
    await timed(bare, 100);
    let withMs = 0;
    let withoutMs = 0;
    for (let done = 0; done < CALLS; done += BATCH) {
      withMs += await timed(fenced, BATCH);
      withoutMs += await timed(bare, BATCH);
    }
    console.log(
      `epoch check per node request: ${CALLS} signed status round trips each way, in-process node, memory connector`,
    );
    console.log(
      `  ${"with the store and epoch checked".padEnd(48)} ${((withMs / CALLS) * 1000).toFixed(1).padStart(10)} µs/request`,
    );
    console.log(
      `  ${"without (no authority: nothing to check)".padEnd(48)} ${((withoutMs / CALLS) * 1000).toFixed(1).padStart(10)} µs/request`,
    );
    ratio("request with the check / without", withMs, withoutMs);

    // The judgement alone (what the check adds besides ~60 signed bytes and one map lookup).
    const binding = { store_id: store.store_id, epoch: 3 };
    const n = 2_000_000;
    const start = process.hrtime.bigint();
    let served = 0;
    for (let i = 0; i < n; i++) if (judgeAuthority(binding, store, true).kind === "serve") served++;
    const ns = Number(process.hrtime.bigint() - start) / n;
    console.log(
      `  ${"judgeAuthority alone".padEnd(48)} ${ns.toFixed(1).padStart(10)} ns/call (${served === n ? "all served" : "?"})`,
    );
  } finally {
    await daemon.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
