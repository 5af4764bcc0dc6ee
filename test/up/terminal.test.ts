/**
 * `berth up` stopped the way a terminal stops it (issue 13, the blocker). A terminal never signals one pid: Ctrl-C
 * makes the line discipline send SIGINT to the whole foreground process group, and closing the terminal hangs up the
 * session (SIGHUP). Each test runs `berth up` as the leader of a session of its own — under a real pseudo-terminal
 * (util-linux `script`) or under setsid(1) — stops it that way, and then asks /proc whether any node daemon or agent
 * process of its home is left.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { berthBin } from "../support/built.js";
import { processesUnder } from "../support/processes-under.js";

// One home for the three runs: each starts from what the previous one left (nothing running, the state reused).
let home: string | undefined;
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.pid && child.exitCode === null) killGroup(child.pid, "SIGKILL");
  if (home) for (const pid of processesUnder(home)) killQuietly(pid, "SIGKILL");
});
afterAll(() => {
  if (home) rmSync(home, { recursive: true, force: true });
});

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  killQuietly(-pgid, signal);
}

function sharedHome(): string {
  home ??= mkdtempSync(join(tmpdir(), "berth-term-"));
  return home;
}

interface Session {
  readonly child: ChildProcess;
  output(): string;
  waitFor(text: string, timeoutMs: number): Promise<void>;
  exited(): Promise<number | null>;
}

function session(command: string, args: readonly string[], home: string, options: { detached: boolean }): Session {
  const child = spawn(command, args, {
    env: { ...process.env, BERTH_HOME: home, NO_COLOR: "1" },
    stdio: ["pipe", "pipe", "pipe"],
    detached: options.detached,
  });
  started.push(child);
  let out = "";
  const collect = (d: Buffer) => {
    out += d.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exit = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return {
    child,
    output: () => out,
    exited: () => exit,
    async waitFor(text, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!out.includes(text)) {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(
            `exited (${child.exitCode ?? child.signalCode}) before printing ${text}: ${out.slice(-2000)}`,
          );
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${text}: ${out.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

/**
 * An interactive shell in a pseudo-terminal (util-linux `script`), with `berth up` typed at its prompt: the shell runs
 * it as the terminal's foreground job, in a process group of its own, exactly as in a terminal window.
 */
function underShellInTerminal(home: string): Session {
  const shell = session("script", ["-qfec", "bash --norc --noprofile -i", "/dev/null"], home, { detached: true });
  const line = [process.execPath, berthBin(), "up", "--no-kubernetes", "--port", "0", "--data-dir", home]
    .map((a) => `'${a}'`)
    .join(" ");
  shell.child.stdin?.write(`${line}\n`);
  return shell;
}

/** `berth up` leading a new session and process group (setsid(2)), as a shell's foreground job leads its group. */
function underSetsid(home: string): Session {
  return session(
    "setsid",
    [process.execPath, berthBin(), "up", "--no-kubernetes", "--port", "0", "--data-dir", home],
    home,
    { detached: false },
  );
}

/** What a Ctrl-C must find: three daemons and the agents running, all under the home. */
async function expectRunning(home: string): Promise<void> {
  const pids = processesUnder(home);
  // three node daemons, and at least one process per sample agent (its group's wrapper and the agent itself)
  expect(pids.length, `processes under ${home}`).toBeGreaterThanOrEqual(5);
}

describe("berth up stopped the way a terminal stops it", () => {
  it("a Ctrl-C typed in its terminal stops every agent and every node daemon", async () => {
    const home = sharedHome();
    const terminal = underShellInTerminal(home);
    await terminal.waitFor("ready; press Ctrl-C", 180_000);
    await expectRunning(home);
    terminal.child.stdin?.write("\x03");
    // Typed after the Ctrl-C, so the shell reads it once berth up has ended: the job's exit status.
    terminal.child.stdin?.write("echo berth-up-exit=$?\n");
    await terminal.waitFor("berth-up-exit=0", 180_000);
    expect(terminal.output()).toContain("stopped agent heartbeat");
    expect(terminal.output()).not.toContain("nothing to stop");
    expect(processesUnder(home), terminal.output()).toEqual([]);
  }, 300_000);

  it("SIGINT to its whole process group stops every agent and every node daemon", async () => {
    const home = sharedHome();
    const up = underSetsid(home);
    await up.waitFor("ready; press Ctrl-C", 180_000);
    await expectRunning(home);
    killGroup(up.child.pid as number, "SIGINT");
    expect(await up.exited(), up.output()).toBe(0);
    expect(up.output()).not.toContain("nothing to stop");
    expect(processesUnder(home), up.output()).toEqual([]);
  }, 300_000);

  it("closing the terminal it was typed in stops every agent and every node daemon", async () => {
    const home = sharedHome();
    const terminal = underShellInTerminal(home);
    await terminal.waitFor("ready; press Ctrl-C", 180_000);
    await expectRunning(home);
    // The terminal window goes away: its pty master closes, the kernel hangs up the shell, the shell sends SIGHUP to
    // its jobs' process groups, and every line berth up writes from now on fails.
    terminal.child.kill("SIGKILL");
    await terminal.exited();
    const deadline = Date.now() + 120_000;
    while (processesUnder(home).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(processesUnder(home)).toEqual([]);
  }, 300_000);
});
