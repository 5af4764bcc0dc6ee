/**
 * Issue 13 "Operable", the node's side, with a real daemon: its diagnostics are pino JSON lines on stderr saying what
 * it does (place, start, exit, refusal at info, never an environment value), and an agent's output is kept on disk
 * beyond the last 64 KiB (rotated files with a size cap) while `logs` still answers with the tail.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { ALLOW_ALL, cleanup, makePackage, NodeProcess, ok, requireBuild, TestController, waitFor } from "./harness.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(requireBuild);
afterEach(cleanup);

type Line = Record<string, unknown> & { level: number; msg: string };
const pinoLines = (stderr: string): Line[] =>
  stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Line);

describe("the node daemon's logs", () => {
  it("are pino JSON lines on stderr: place, start, exit and refusal at info, with no environment value", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const pkg = makePackage(signer, {
      script: "#!/bin/sh\necho placed-ok\nexit 3\n",
      config: { env: { GREETING: { type: "string" } } },
    });
    const placed = ok(await ctl.place(node, pkg.dir, { env: { GREETING: "a-value-never-logged" } }));
    const id = placed.instance_id as string;
    const refused = await ctl.place(node, makePackage(null).dir, { unchecked: true });
    expect(refused).toMatchObject({ kind: "refused" });
    const lines = await waitFor(() => {
      const l = pinoLines(node.stderr);
      return l.some((x) => x.msg === "instance exited") && l.some((x) => x.msg === "request refused") ? l : undefined;
    }, "the exit and the refusal to be logged");
    for (const l of lines) expect(l).toMatchObject({ component: "node", node_id: node.nodeId });
    const info = (msg: string) => lines.find((l) => l.msg === msg && l.level === 30);
    expect(info("instance placed")).toMatchObject({ instance_id: id, name: "probe", started: true });
    expect(info("instance started")).toMatchObject({ instance_id: id, pid: placed.pid, containment: "cgroup-v2" });
    expect(info("instance exited")).toMatchObject({ instance_id: id, exit_code: 3 });
    expect(info("request refused")).toMatchObject({ method: "place", code: "verify" });
    expect(info("containment probed")).toBeDefined();
    expect(node.stderr).not.toContain("a-value-never-logged");
  });
});

describe("an agent's output", () => {
  it("is kept beyond the last 64 KiB in rotated files, and logs still answers with the tail", async () => {
    const ctl = new TestController();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [ctl.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    // 3 MB of x then a last line, then it keeps running.
    const script = "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' x\necho\necho the-last-line\nexec sleep 300\n";
    const id = ok(await ctl.place(node, makePackage(signer, { script }).dir)).instance_id as string;
    const dir = join(node.dataDir, "instances", id);
    await waitFor(() => {
      try {
        return readFileSync(join(dir, "stdout.log"), "utf8").includes("the-last-line");
      } catch {
        return false;
      }
    }, "the output to be written");
    const tail = ok(await ctl.verb(node, "logs", { instance_id: id }));
    expect(tail.stdout as string).toMatch(/x+\nthe-last-line\n$/);
    expect(tail.truncated_stdout).toBe(true);
    // The read rotated the 3 MB file: it is kept whole in stdout.log.1, far beyond the 64 KiB the node kept before.
    expect(statSync(join(dir, "stdout.log.1")).size).toBe(3_000_000 + 1 + "the-last-line\n".length);
    expect(statSync(join(dir, "stdout.log")).size).toBe(0);
  });
});
