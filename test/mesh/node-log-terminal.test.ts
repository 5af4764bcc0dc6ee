/**
 * Issue 36: a node daemon's diagnostics on a terminal are one short line each (`07:52:39 INFO  containment probed  …`),
 * as `berth serve` and `berth up` already write theirs; with `--log-format json`, or when stderr is not a terminal,
 * pino's JSON lines for collectors. Judged from outside: `berth node serve` run under a real pseudo-terminal (util-linux
 * `script`) and with a pipe, its output read as a person or a collector would.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAIN, requireBuild, tempDir } from "./harness.js";

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** `berth node serve` in a session of its own; its output until it has logged `containment probed`. */
async function serveUntilLogged(dataDir: string, terminal: boolean, extra: readonly string[] = []): Promise<string> {
  const serveArgs = [
    MAIN,
    "node",
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--data-dir",
    dataDir,
    "--allow-root-agents",
    ...extra,
  ];
  const quoted = [process.execPath, ...serveArgs].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const child = terminal
    ? spawn("script", ["-qfec", quoted, "/dev/null"], {
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      })
    : spawn(process.execPath, serveArgs, {
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
  started.push(child);
  let out = "";
  const collect = (d: Buffer) => {
    out += d.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const deadline = Date.now() + 30_000;
  while (!/containment probed[^\n]*\n/.test(out)) {
    if (Date.now() > deadline) throw new Error(`no 'containment probed' line within 30 s; output:\n${out}`);
    if (child.exitCode !== null) throw new Error(`node serve exited ${child.exitCode}:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return out.replace(/\r/g, "");
}

describe("a node daemon's logs", () => {
  it("are human lines on a terminal, and JSON lines with --log-format json or on a pipe", async () => {
    requireBuild();
    const dataDir = join(tempDir("berth-node-log-tty-"), "node");
    execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", dataDir, "--json"], { encoding: "utf8" });

    const human = await serveUntilLogged(dataDir, true);
    const line = human.split("\n").find((l) => l.includes("containment probed")) as string;
    expect(line, human).toMatch(/^\d\d:\d\d:\d\d INFO {2}containment probed {2}\S+=/);
    expect(human, "no JSON log line on a terminal").not.toContain('{"level"');
    expect(human, "no node id repeated on every line").not.toMatch(/node_id=/);
    for (const child of started.splice(0)) process.kill(-(child.pid as number), "SIGKILL");

    const asked = await serveUntilLogged(dataDir, true, ["--log-format", "json"]);
    expect(asked).toMatch(
      /^\{"level":30,"time":\d+,"component":"node","node_id":"[0-9a-f]{32}",.*"msg":"containment probed"\}$/m,
    );
    for (const child of started.splice(0)) process.kill(-(child.pid as number), "SIGKILL");

    const piped = await serveUntilLogged(dataDir, false);
    expect(piped).toMatch(/^\{"level":30,.*"msg":"containment probed"\}$/m);
  }, 120_000);
});
