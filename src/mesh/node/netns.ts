/**
 * A new network namespace for a `network: "none"` package (issue 15): the entry runs behind `unshare`, in a
 * namespace with only a loopback that is down, so it reaches nothing, the host's own 127.0.0.1 included. Probed once
 * per daemon start by running the prefix for real: root needs nothing more; a daemon that is not root needs a user
 * namespace too (`--map-current-user` keeps the files it makes owned by it).
 */
import { spawnSync } from "node:child_process";

/**
 * Issue 33 item 11: a root agent owns every cgroup file, so it could write its pid into another cgroup's
 * `cgroup.procs` and, with `setsid`, leave both its cgroup and its process group: nothing would end it at unload.
 * Behind this prefix it runs in a mount namespace of its own where an empty read-only tmpfs covers /sys/fs/cgroup, and
 * without CAP_SYS_ADMIN (dropped from its bounding set, confine-user.ts `ROOT_AGENT_PREFIX`) it can neither unmount it
 * nor mount a cgroup file system that shows more than its own cgroup (a mount inherited into a user namespace is
 * locked; a cgroup2 mount there is rooted at the agent's cgroup). A cgroup namespace alone is not enough: the kernel
 * confines moves to it only when cgroup2 is mounted with `nsdelegate` (not on this project's build machine).
 * Probed once per daemon start; a failed mount ends the start (exit 125), never a root agent with its cgroups in view.
 */
export function probeHideCgroupsPrefix(): readonly string[] | null {
  const hide =
    'mount -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=555 berth-no-cgroups /sys/fs/cgroup || exit 125; exec "$@"';
  const prefix = ["unshare", "--mount", "--", "/bin/sh", "-c", hide, "berth-hide-cgroups"];
  const r = spawnSync(prefix[0] as string, [...prefix.slice(1), "true"], { stdio: "ignore", timeout: 5000 });
  return r.status === 0 ? prefix : null;
}

/** The argv prefix that runs a program in a new network namespace on this host, or null when none can be made. */
export function probeNetnsPrefix(daemonUid: number): readonly string[] | null {
  const candidates =
    daemonUid === 0 ? [["unshare", "--net", "--"]] : [["unshare", "--user", "--map-current-user", "--net", "--"]];
  for (const prefix of candidates) {
    const r = spawnSync(prefix[0] as string, [...prefix.slice(1), "true"], { stdio: "ignore", timeout: 5000 });
    if (r.status === 0) return prefix;
  }
  return null;
}
