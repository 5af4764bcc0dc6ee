/** Child processes for integration tiers: started, awaited on conditions (never fixed sleeps), always reaped. */
import { type ChildProcess, spawn } from "node:child_process";

export interface Spawned {
  readonly child: ChildProcess;
  output(): string;
  errors(): string;
  waitForOutput(pattern: RegExp | string, timeoutMs?: number): Promise<void>;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const live = new Set<ChildProcess>();

/**
 * `wrap`: a command that execs the rest (`unshare --uts sh -c 'hostname X && exec "$0" "$@"'`, issue 20's "another
 * host"); it must exec, so the child's pid stays node's.
 */
export function spawnNode(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string; wrap?: readonly string[] } = {},
): Spawned {
  const [command, ...prefix] = [...(options.wrap ?? []), process.execPath];
  const child = spawn(command as string, [...prefix, ...args], {
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
    stdio: ["pipe", "pipe", "pipe"],
  });
  live.add(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  if (options.input !== undefined) child.stdin?.end(options.input);
  return {
    child,
    output: () => out,
    errors: () => err,
    exited: () => exit,
    async waitForOutput(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      const matches = () => (typeof pattern === "string" ? out.includes(pattern) : pattern.test(out));
      while (!matches()) {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(
            `process exited (${child.exitCode ?? child.signalCode}) before printing ${String(pattern)}; stderr: ${err}`,
          );
        }
        if (Date.now() > deadline)
          throw new Error(
            `timed out waiting for ${String(pattern)}; stdout: ${out.slice(-500)} stderr: ${err.slice(-500)}`,
          );
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  };
}

/** Runs a process to completion and returns its status and output. */
export async function runNode(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string } = {}) {
  const p = spawnNode(args, options);
  const { code, signal } = await p.exited();
  return { code, signal, stdout: p.output(), stderr: p.errors() };
}

/** Kills every child still running; call from afterEach/afterAll. */
export function killAll(): void {
  for (const child of live) child.kill("SIGKILL");
  live.clear();
}
