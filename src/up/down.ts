/**
 * `berth down`: stops what `berth up` started in a home, whether it was detached or still runs in another terminal.
 * A foreground `berth up` is asked to stop itself (SIGTERM: the same clean path as its Ctrl-C); anything it leaves, or
 * what a detached one left, is stopped here through stop-local-mesh.ts. Idempotent: a second `berth down` finds
 * nothing running and says so.
 */
import { resolve } from "node:path";
import type { ProcessIdentity } from "../mesh/node/runtime.js";
import { type StopReport, stopLocalMesh } from "./stop-local-mesh.js";
import { isAlive, liveDaemons, liveForegroundUp, readUpState } from "./up-state.js";

export type DownOutcome =
  | { readonly kind: "nothing_up"; readonly home: string; readonly reason: string }
  | {
      readonly kind: "stopped";
      readonly home: string;
      readonly foreground_up: number | null;
      readonly report: StopReport;
    };

/** How long a foreground `berth up` gets to stop its agents and nodes before `berth down` does it instead. */
const FOREGROUND_STOP_MS = 180_000;

async function askToStop(up: ProcessIdentity, log: (line: string) => void): Promise<boolean> {
  log(`berth up runs in the foreground (pid ${up.pid}); asking it to stop`);
  try {
    process.kill(up.pid, "SIGTERM");
  } catch {
    return true;
  }
  const end = Date.now() + FOREGROUND_STOP_MS;
  while (Date.now() < end) {
    if (!isAlive(up)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !isAlive(up);
}

export async function down(o: { home: string; berthMain: string; log: (line: string) => void }): Promise<DownOutcome> {
  const home = resolve(o.home);
  const state = readUpState(home);
  if (state === undefined) return { kind: "nothing_up", home, reason: "berth up never ran in this home" };
  const foreground = liveForegroundUp(state);
  if (foreground && !(await askToStop(foreground, o.log)))
    o.log(`berth up (pid ${foreground.pid}) did not stop in time; stopping its agents and nodes here`);
  const now = readUpState(home) ?? state;
  if (liveDaemons(now).length === 0) {
    if (foreground)
      return {
        kind: "stopped",
        home,
        foreground_up: foreground.pid,
        report: { stopped_agents: [], stopped_instances: [], left_instances: [], stopped_nodes: [], kept_nodes: [] },
      };
    return { kind: "nothing_up", home, reason: "no node daemon of berth up is running" };
  }
  return {
    kind: "stopped",
    home,
    foreground_up: foreground?.pid ?? null,
    report: await stopLocalMesh({ home, berthMain: o.berthMain, log: o.log }),
  };
}
