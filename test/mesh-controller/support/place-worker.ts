/**
 * A controller process that SIGKILLs itself at a chosen point of one placement (spec/mesh.md §18.3), so a test can
 * restart the controller on the same database and check that nothing was duplicated or orphaned.
 *
 *   node place-worker.js <data-dir> <key-file> <package-dir> <crash-at> <addr>...
 *
 * crash-at: `after-decision` (decision chained, nothing sent), `after-send` (the place request written to the
 * socket), `before-answer` (the node's place answer received, not yet processed).
 */
import { loadKeyFile } from "../../../src/keys/key-file.js";
import { MeshController } from "../../../src/mesh/controller/controller.js";
import type { Connector, FrameStream } from "../../../src/mesh/transport/frames.js";
import { TlsConnector } from "../../../src/mesh/transport/tls.js";

const [dataDir, keyFile, pkgDir, crashAt, ...addrs] = process.argv.slice(2);
if (!dataDir || !keyFile || !pkgDir || !crashAt || addrs.length === 0)
  throw new Error("usage: place-worker <data-dir> <key-file> <package-dir> <crash-at> <addr>...");

const die = (): never => {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
};

function methodOf(frame: Uint8Array, type: "request" | "response"): string | null {
  try {
    const msg = JSON.parse(Buffer.from(frame).toString("utf8")) as { type?: string; signed?: { payload?: string } };
    if (msg.type !== type || typeof msg.signed?.payload !== "string") return null;
    return (JSON.parse(msg.signed.payload) as { method?: string }).method ?? null;
  } catch {
    return null;
  }
}

const controllerKey = loadKeyFile(keyFile);

class CrashingConnector implements Connector {
  private readonly inner = new TlsConnector({ identity: controllerKey, connectTimeoutMs: 2_000 });
  async connect(addr: string, signal?: AbortSignal): Promise<FrameStream> {
    const s = await this.inner.connect(addr, signal);
    return {
      remote: s.remote,
      peerKey: s.peerKey,
      close: () => s.close(),
      async send(frame) {
        await s.send(frame);
        if (crashAt === "after-send" && methodOf(frame, "request") === "place") die();
      },
      async recv(sig) {
        const frame = await s.recv(sig);
        if (crashAt === "before-answer" && methodOf(frame, "response") === "place") die();
        return frame;
      },
    };
  }
}

const controller = await MeshController.open({
  dataDir,
  // The test's store when it is PostgreSQL (BERTH_TEST_DATABASE=postgres), else the SQLite file in the home.
  ...(process.env.BERTH_DATABASE_URL ? { database: process.env.BERTH_DATABASE_URL } : {}),
  key: controllerKey,
  connector: new CrashingConnector(),
  timeouts: { callMs: 5_000, placeMs: 15_000, describeMs: 3_000 },
  hooks: { afterDecision: () => (crashAt === "after-decision" ? die() : undefined) },
});
for (const addr of addrs) {
  const r = await controller.addTarget(addr, "paired");
  if (!r.ok) throw new Error(r.error);
}
const report = await controller.place({ package: pkgDir });
process.stdout.write(`${JSON.stringify({ survived: true, placed: report.placed })}\n`);
