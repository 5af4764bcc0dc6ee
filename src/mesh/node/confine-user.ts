/**
 * The unprivileged user a root daemon runs agents as (issue 15): node.json `agent_user`, resolved through the
 * system's user database (`id`, so NSS users count), created by `berth node init --create-agent-user`. The drop
 * happens inside the instance's wrapper, after it joined its cgroups and network namespace (which need root), with
 * `setpriv` (util-linux): real, effective and saved ids, no supplementary groups, no capabilities kept, and the
 * no_new_privs bit (issue 33 item 12), which every agent gets, whoever it runs as.
 */
import { spawnSync } from "node:child_process";

export function resolveUser(name: string): { uid: number; gid: number } | null {
  const id = (flag: string) => {
    const r = spawnSync("id", [flag, name], { encoding: "utf8", timeout: 5000 });
    const n = Number(r.stdout?.trim());
    return r.status === 0 && Number.isInteger(n) ? n : null;
  };
  const uid = id("-u");
  const gid = id("-g");
  return uid === null || gid === null ? null : { uid, gid };
}

export function setprivAvailable(): boolean {
  return spawnSync("setpriv", ["--version"], { stdio: "ignore", timeout: 5000 }).status === 0;
}

/** Issue 33 item 12: `--no-new-privs` too, so no set-user-ID program (sudo, su, a capability file) raises the agent. */
export function dropPrefix(uid: number, gid: number): string[] {
  return [
    "setpriv",
    `--reuid=${uid}`,
    `--regid=${gid}`,
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
  ];
}

/** Issue 33 item 12: for an agent that runs as the daemon's own user, only the no_new_privs bit. */
export const NO_NEW_PRIVS_PREFIX: readonly string[] = ["setpriv", "--no-new-privs", "--"];

/**
 * Issue 33 item 11: a root agent (allow_root_agents) keeps root, less what would let it leave its cgroup namespace or
 * reach into berth's own processes: CAP_SYS_ADMIN (setns, mounts), CAP_SYS_PTRACE (ptrace of the daemon),
 * CAP_SYS_MODULE (kernel code). It still owns the machine's files: root is root; an agent user is the safe choice.
 */
export const ROOT_AGENT_PREFIX: readonly string[] = [
  "setpriv",
  "--bounding-set=-sys_admin,-sys_ptrace,-sys_module",
  "--inh-caps=-all",
  "--no-new-privs",
  "--",
];

/** Creates a system user with no home and no login shell (useradd, else BusyBox/Alpine adduser). */
export function createSystemUser(name: string): void {
  if (resolveUser(name) !== null) return;
  const tries: Array<[string, string[]]> = [
    [
      "useradd",
      [
        "--system",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        "--user-group",
        name,
      ],
    ],
    ["adduser", ["-S", "-D", "-H", "-s", "/sbin/nologin", name]],
  ];
  const errors: string[] = [];
  for (const [cmd, args] of tries) {
    const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 20_000 });
    if (r.status === 0 && resolveUser(name) !== null) return;
    errors.push(`${cmd}: ${(r.error?.message ?? r.stderr ?? "").trim().slice(0, 200)}`);
  }
  throw new Error(
    `could not create the agent user ${name} (${errors.join("; ")}); create it yourself and run berth node init again`,
  );
}
