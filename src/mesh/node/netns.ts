/**
 * A new network namespace for a `network: "none"` package (issue 15): the entry runs behind `unshare`, in a
 * namespace with only a loopback that is down, so it reaches nothing, the host's own 127.0.0.1 included. Probed once
 * per daemon start by running the prefix for real: root needs nothing more; a daemon that is not root needs a user
 * namespace too (`--map-current-user` keeps the files it makes owned by it).
 */
import { spawnSync } from "node:child_process";

/** The argv prefix that runs a program in a new network namespace on this host, or null when none can be made. */
export function probeNetnsPrefix(daemonUid: number): readonly string[] | null {
  const candidates = daemonUid === 0 ? [["unshare", "--net", "--"]] : [["unshare", "--user", "--map-current-user", "--net", "--"]];
  for (const prefix of candidates) {
    const r = spawnSync(prefix[0] as string, [...prefix.slice(1), "true"], { stdio: "ignore", timeout: 5000 });
    if (r.status === 0) return prefix;
  }
  return null;
}
