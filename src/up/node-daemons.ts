/**
 * The local node daemons of `berth up` as OS processes: started in a session of their own, stopped by identity.
 *
 * Why a session of their own (issue 13): a Ctrl-C typed in a terminal sends SIGINT to the terminal's whole foreground
 * process group, and closing the terminal sends SIGHUP to it. A daemon in that group would stop at the same instant as
 * `berth up`, before `berth up` could stop the agents through it, and the agents (which outlive their daemon by
 * design, spec/mesh.md §13) would be left running, owned by nobody. Started with setsid(2) (`detached`), a daemon hears
 * only what `berth up` or `berth down` sends it, and only after the agents are stopped.
 *
 * Its output goes to `<node dir>/daemon.log` rather than a pipe: a detached daemon outlives `berth up --detach`, and a
 * pipe to a process that has exited would fail its next write.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ProcessIdentity } from "../mesh/node/runtime.js";
import { identityOf, isAlive } from "./up-state.js";

export interface StartedDaemon {
  readonly address: string;
  readonly nodeId: string;
  readonly identity: ProcessIdentity;
}

const LISTEN_DEADLINE_MS = 30_000;

export const daemonLogPath = (dir: string) => join(dir, "daemon.log");

const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

const lastLines = (text: string, n: number) => text.trim().split("\n").slice(-n).join(" / ");

/**
 * Issue 33 item 11: who the agents of `berth up`'s nodes run as. Not root: the user who ran berth up, or, when that is
 * root, `nobody` (no user is created: berth up is a quickstart and does not edit the user database; a node that
 * serves for real gets its own user, docs/mesh.md); root only when asked for with `berth up --allow-root-agents`.
 */
export type UpAgents =
  | { readonly kind: "invoker" }
  | { readonly kind: "user"; readonly user: string }
  | { readonly kind: "root" };

export const UP_AGENT_USER = "nobody";

export function upAgents(uid: number, allowRootAgents: boolean): UpAgents {
  if (uid !== 0) return { kind: "invoker" };
  return allowRootAgents ? { kind: "root" } : { kind: "user", user: UP_AGENT_USER };
}

/** `berth up --log-format`: text (one line each, for people) or json (pino's lines, for collectors); auto: the default. */
export type UpLogFormat = "auto" | "text" | "json";

/** Starts `berth node serve` for `dir` in a new session and resolves once it printed its listening line. */
export async function startDaemon(
  berthMain: string,
  dir: string,
  port: number,
  labels: readonly string[],
  agents: UpAgents = { kind: "invoker" },
  logFormat: UpLogFormat = "auto",
): Promise<StartedDaemon> {
  const logPath = daemonLogPath(dir);
  const from = sizeOf(logPath);
  const log = openSync(logPath, "a", 0o600);
  const asRoot =
    agents.kind === "root" ? ["--allow-root-agents"] : agents.kind === "user" ? ["--agent-user", agents.user] : [];
  const args = [
    berthMain,
    "node",
    "serve",
    "--listen",
    `127.0.0.1:${port}`,
    "--data-dir",
    dir,
    ...asRoot,
    ...labels.flatMap((l) => ["--label", l]),
    // Issue 36: `berth up --log-format` reaches the daemons; unset, theirs decides (json: daemon.log is not a terminal).
    ...(logFormat === "auto" ? [] : ["--log-format", logFormat]),
  ];
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(process.execPath, args, { stdio: ["ignore", log, log], detached: true });
  } finally {
    closeSync(log);
  }
  let exited: string | null = null;
  child.once("exit", (code, signal) => {
    exited = String(code ?? signal);
  });
  child.once("error", (error) => {
    exited = error.message;
  });
  const output = () => readFileSync(logPath).subarray(from).toString();
  const deadline = Date.now() + LISTEN_DEADLINE_MS;
  for (;;) {
    const text = output();
    // The daemon's diagnostics (pino lines and warnings on stderr) share the log; the listening line is on stdout.
    const complete = text
      .slice(0, text.lastIndexOf("\n") + 1)
      .split("\n")
      .filter(Boolean);
    const first = complete.find((l) => l.includes('"event":"listening"'));
    if (first) {
      let ev: { event?: string; address?: string; node_id?: string } = {};
      try {
        ev = JSON.parse(first) as typeof ev;
      } catch {
        // not the listening line: reported below
      }
      if (ev.event === "listening" && ev.address && ev.node_id && child.pid !== undefined) {
        const identity = identityOf(child.pid);
        if (identity) {
          return { address: ev.address, nodeId: ev.node_id, identity };
        }
      }
      await stopProcess(child.pid === undefined ? null : (identityOf(child.pid) ?? null));
      throw new Error(
        `node daemon in ${dir} printed something other than its listening line: ${lastLines(text, 3)} (log: ${logPath})`,
      );
    }
    if (exited !== null)
      throw new Error(
        `node daemon in ${dir} exited (${exited}) before listening: ${lastLines(text, 3)} (log: ${logPath})`,
      );
    if (Date.now() > deadline) {
      await stopProcess(child.pid === undefined ? null : (identityOf(child.pid) ?? null));
      throw new Error(
        `node daemon in ${dir} did not start listening within ${LISTEN_DEADLINE_MS / 1000} s (log: ${logPath})`,
      );
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

const waitUntilGone = async (identity: ProcessIdentity, deadlineMs: number): Promise<boolean> => {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (!isAlive(identity)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return !isAlive(identity);
};

/**
 * SIGTERM (the daemon closes its listener and exits; its instances are stopped before this is called), SIGKILL after
 * `graceMs`. Only the very process recorded is signalled: a recycled pid is left alone. True once it is gone.
 */
export async function stopProcess(identity: ProcessIdentity | null, graceMs = 10_000): Promise<boolean> {
  if (!isAlive(identity)) return true;
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(identity.pid, s);
    } catch {
      // it ended between the check and the signal
    }
  };
  signal("SIGTERM");
  if (await waitUntilGone(identity, graceMs)) return true;
  signal("SIGKILL");
  return waitUntilGone(identity, 5_000);
}
