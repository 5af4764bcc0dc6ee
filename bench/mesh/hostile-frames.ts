/**
 * A node under hostile connections (issue 12), each figure beside the same daemon's figures with no attack, in the
 * same run: the legitimate signed `status` p99 and the daemon's resident memory while
 * - 4 connections keep sending 16 MiB request frames (the node cuts each at its length prefix; they resend), and
 * - 500 connections churn (open, send nothing or a frame's first bytes, reopen the moment they are cut).
 * The attackers run in a child process (this file with `--attack`), so the controller's figures are the daemon's.
 * Figures are printed, never asserted. Run after `npm run build:test` from the repository root (scripts/bench does).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createConnection, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { parseAddr } from "../../src/mesh/transport/tcp.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { numberFlag } from "../support.js";

const MAIN = resolve("dist/src/cli/entry/main.js");
const CALLS = numberFlag("--calls", 300);

function statusKiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
}

/** Opens sockets that reconnect whenever they are cut; `onConnect` decides what each one sends. */
function hostile(addr: string, count: number, onConnect: (s: Socket, i: number) => void): { stop(): void } {
  const { host, port } = parseAddr(addr);
  const sockets = new Set<Socket>();
  let stopped = false;
  const open = (i: number) => {
    if (stopped) return;
    const s = createConnection({ host, port }, () => onConnect(s, i));
    sockets.add(s);
    s.on("error", () => undefined);
    s.on("close", () => {
      sockets.delete(s);
      setImmediate(() => open(i));
    });
  };
  for (let i = 0; i < count; i++) open(i);
  return {
    stop() {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

const HUGE = (() => {
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(16 * 1024 * 1024, 0);
  return Buffer.concat([
    prefix,
    Buffer.from('{"type":"request","signed":{"payload":"'),
    Buffer.alloc(16 * 1024 * 1024 - 40, "a"),
  ]);
})();

const PARTIAL = (() => {
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(1000, 0);
  return Buffer.concat([prefix, Buffer.from('{"type":"req')]);
})();

async function measure(
  client: NodeClient,
  target: TargetRef,
  pid: number,
): Promise<{ p99: number; median: number; rssPeakKiB: number }> {
  const times: number[] = [];
  let rssPeakKiB = statusKiB(pid, "VmRSS");
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    const r = await client.call(target, "status", { instance_id: null, include_departed: false });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (r.kind !== "ok") throw new Error(`status failed under attack: ${JSON.stringify(r).slice(0, 300)}`);
    if (i % 10 === 0) rssPeakKiB = Math.max(rssPeakKiB, statusKiB(pid, "VmRSS"));
  }
  const sorted = [...times].sort((a, b) => a - b);
  return {
    p99: sorted[Math.floor(sorted.length * 0.99)] as number,
    median: sorted[Math.floor(sorted.length / 2)] as number,
    rssPeakKiB,
  };
}

function report(
  label: string,
  m: { p99: number; median: number; rssPeakKiB: number },
  base: { p99: number; rssPeakKiB: number },
): void {
  console.log(
    `  ${`${label}: status median / p99 (ms)`.padEnd(56)} ${m.median.toFixed(2).padStart(8)} ${m.p99.toFixed(2).padStart(8)}`,
  );
  console.log(`  ${`${label}: daemon RSS peak (MiB)`.padEnd(56)} ${(m.rssPeakKiB / 1024).toFixed(1).padStart(8)}`);
  console.log(`  ${`${label}: p99 / no attack`.padEnd(56)} ${(m.p99 / base.p99).toFixed(2).padStart(8)}x`);
  console.log(
    `  ${`${label}: RSS peak / no attack`.padEnd(56)} ${(m.rssPeakKiB / base.rssPeakKiB).toFixed(2).padStart(8)}x`,
  );
}

/** Starts this file as the attacker and waits until its sockets are open. */
async function attacker(kind: "frames" | "churn", addr: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--attack", kind, "--addr", addr], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((res, rej) => {
    child.stdout?.once("data", () => res());
    child.once("exit", (code) => rej(new Error(`attacker exited ${code}`)));
  });
  return child;
}

function attack(kind: string, addr: string): void {
  if (kind === "frames") hostile(addr, 4, (s) => s.write(HUGE, () => undefined));
  else
    hostile(addr, 500, (s, i) => {
      if (i % 3 !== 0) s.write(PARTIAL);
    });
  console.log("attacking");
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "berth-bench-hostile-"));
  const controller = generateSigningKey();
  const nodeDir = join(dir, "node");
  execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", nodeDir, "--json"]);
  const daemon = spawn(
    process.execPath,
    [MAIN, "node", "serve", "--listen", "127.0.0.1:0", "--data-dir", nodeDir, "--controller", controller.publicKey],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    const ready = await new Promise<Record<string, unknown>>((res, rej) => {
      let out = "";
      daemon.stdout?.on("data", (c: Buffer) => {
        out += c.toString();
        const line = out.split("\n").find((l) => l.startsWith("{"));
        if (line && out.includes("\n")) res(JSON.parse(line) as Record<string, unknown>);
      });
      daemon.once("exit", (code) => rej(new Error(`node serve exited ${code}`)));
    });
    const addr = ready.address as string;
    const pid = daemon.pid as number;
    const client = new NodeClient({
      key: controller,
      connector: new TlsConnector({ identity: controller }),
      timeoutMs: 20_000,
    });
    const described = await client.describe(addr, null);
    if (described.kind !== "described") throw new Error(`describe failed: ${JSON.stringify(described)}`);
    const target: TargetRef = { addr, nodeId: described.nodeId, key: described.key, bootId: described.bootId };
    console.log(
      `node under hostile connections (${CALLS} signed status calls per phase, one connection per call, loopback)`,
    );
    await measure(client, target, pid); // warm-up
    const base = await measure(client, target, pid);
    report("no attack", base, base);
    const frames = await attacker("frames", addr);
    const underFrames = await measure(client, target, pid).finally(() => frames.kill("SIGKILL"));
    report("4 x 16 MiB frames", underFrames, base);
    const churn = await attacker("churn", addr);
    const underChurn = await measure(client, target, pid).finally(() => churn.kill("SIGKILL"));
    report("500 churning sockets", underChurn, base);
  } finally {
    daemon.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

const argv = process.argv.slice(2);
if (argv[0] === "--attack") attack(argv[1] as string, argv[3] as string);
else await main();
