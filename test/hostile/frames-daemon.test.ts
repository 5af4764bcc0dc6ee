/**
 * Issue 12 (Medium): a node buffered and parsed a 16 MiB first frame before checking anything. A real `berth node
 * serve` daemon: four connections announcing 16 MiB request frames are cut at the length prefix, the daemon's peak
 * memory does not grow by anything like their size, and a legitimate place still fetches a package whose file is
 * larger than the request cap (the node asked for that data, so its frames may be larger).
 */
import { randomBytes } from "node:crypto";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { buildPackage, initPackage, signPackage } from "../../src/mesh/packages/dir.js";
import { parseAddr } from "../../src/mesh/transport/tcp.js";
import {
  ALLOW_ALL,
  cleanup,
  NodeProcess,
  ok,
  PROBE_SCRIPT,
  requireBuild,
  TestController,
  tempDir,
} from "../mesh/harness.js";

const MiB = 1024 * 1024;

/** Peak resident memory of a process in KiB (/proc/<pid>/status VmHWM). */
function peakKiB(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmHWM for ${pid}`);
  return Number(m[1]);
}

/** A `request` frame of `bytes` whose payload is one long string: valid JSON, so a parser would allocate it all. */
function hugeRequestFrame(bytes: number): Buffer {
  const head = Buffer.from('{"type":"request","signed":{"payload":"');
  const tail = Buffer.from(`","key":"${"a".repeat(64)}","sig":"${"b".repeat(128)}"}}`);
  const body = Buffer.alloc(bytes - head.length - tail.length, "a");
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(bytes, 0);
  return Buffer.concat([prefix, head, body, tail]);
}

/** Sends the frame and resolves when the node has closed the connection. */
function sendAndAwaitClose(addr: string, frame: Buffer): Promise<void> {
  const { host, port } = parseAddr(addr);
  return new Promise((resolve) => {
    const s = createConnection({ host, port }, () => s.write(frame, () => undefined));
    s.on("error", () => undefined);
    s.on("data", () => undefined);
    s.on("close", () => resolve());
  });
}

afterAll(cleanup);

describe("frame size caps on a node's listener", () => {
  it("four 16 MiB first frames are refused at their length prefix without the daemon's memory growing", async () => {
    requireBuild();
    const ctl = new TestController();
    const node = await NodeProcess.create({ controllers: [ctl.key.publicKey], signers: [] });
    ok(await ctl.status(node));
    const pid = node.proc?.pid as number;
    const before = peakKiB(pid);
    const frame = hugeRequestFrame(16 * MiB);
    await Promise.all([0, 1, 2, 3].map(() => sendAndAwaitClose(node.address, frame)));
    ok(await ctl.status(node));
    const grownMiB = (peakKiB(pid) - before) / 1024;
    // Four frames buffered would be ≥ 64 MiB before any parse; a generous bound far below that.
    console.log(`daemon peak RSS grew ${grownMiB.toFixed(1)} MiB`);
    expect(grownMiB).toBeLessThan(32);
  }, 60_000);

  it("a place fetches a package with a 1.2 MB file, larger than the request frame cap, in frames the node asked for", async () => {
    requireBuild();
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const dir = tempDir("berth-pkg-big-");
    writeFileSync(join(dir, "run.sh"), PROBE_SCRIPT);
    chmodSync(join(dir, "run.sh"), 0o755);
    writeFileSync(join(dir, "blob.bin"), randomBytes(1_200_000));
    initPackage(dir, {
      name: "probe",
      kind: "probe",
      files: ["run.sh", "blob.bin"],
      variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
      network: "egress",
    });
    buildPackage(dir);
    signPackage(dir, signer);
    const placed = ok(await ctl.place(node, dir));
    expect(placed).toMatchObject({ state: "running" });
  }, 60_000);
});
