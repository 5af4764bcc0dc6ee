/** Running one berth verb as a child process, the way `berth up` does every step past its first-run files. */
import { spawn } from "node:child_process";

export interface VerbResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs one berth verb as a child process, as a user would type it. In a process group of its own: a second Ctrl-C
 * typed while `berth up` stops (SIGINT to the terminal's whole group) must not kill an `agent stop` half-way. With `timeoutMs` a verb still running by then is
 * killed and answers code null (used for probes, such as a Kubernetes cluster that may not answer).
 */
export function runVerb(
  berthMain: string,
  home: string,
  args: readonly string[],
  timeoutMs?: number,
): Promise<VerbResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [berthMain, ...args], {
      env: { ...process.env, BERTH_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}
