/**
 * The node's cgroups (issue 15): probing what the host offers (v2 at `/sys/fs/cgroup` or `/sys/fs/cgroup/unified`,
 * v1 controllers beside it), making one cgroup per instance under the daemon's own, setting its limits, listing and
 * killing every process in it, and reading whether the kernel's OOM killer fired there. Shell: files under
 * /sys/fs/cgroup. What to use is decided by `core/node/containment.ts`.
 *
 * Layout: `<daemon's cgroup>/berth-<node id, 12 hex>/<instance id>` in each hierarchy the plan uses, so an instance
 * stays inside whatever contains the daemon (a systemd unit with `Delegate=yes`, a container's limit).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type {
  ContainmentPlan,
  HostProbe,
  KillMethod,
  LimitPlace,
  V1Probe,
  V2Probe,
} from "../../core/node/containment.js";

interface Mount {
  readonly type: string;
  readonly point: string;
  readonly options: readonly string[];
}

function mounts(): Mount[] {
  let text: string;
  try {
    text = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return [];
  }
  const out: Mount[] = [];
  for (const line of text.split("\n")) {
    const sep = line.indexOf(" - ");
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(" ");
    const right = line.slice(sep + 3).split(" ");
    const point = left[4];
    const type = right[0];
    if (point && (type === "cgroup" || type === "cgroup2"))
      out.push({ type, point, options: (right[2] ?? "").split(",") });
  }
  return out;
}

/** `/proc/self/cgroup`: "" → the v2 path, each v1 controller → its path. */
function ownCgroups(): Map<string, string> {
  const out = new Map<string, string>();
  let text = "";
  try {
    text = readFileSync("/proc/self/cgroup", "utf8");
  } catch {
    return out;
  }
  for (const line of text.trim().split("\n")) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    const controllers = m[2] as string;
    if (controllers === "") out.set("", m[3] as string);
    else for (const c of controllers.split(",")) out.set(c, m[3] as string);
  }
  return out;
}

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
};

const write = (path: string, value: string): boolean => {
  try {
    writeFileSync(path, value);
    return true;
  } catch {
    return false;
  }
};

/** Can the daemon create a child of `dir`? Tried for real (permissions, delegation and read-only mounts all differ). */
function tryChild(dir: string, check?: (child: string) => boolean): { writable: boolean; checked: boolean } {
  const child = join(dir, `berth-probe-${process.pid}`);
  try {
    mkdirSync(child);
  } catch {
    return { writable: false, checked: false };
  }
  const checked = check ? check(child) : false;
  try {
    rmdirSync(child);
  } catch {
    // a probe directory holds no process; it goes with the next probe
  }
  return { writable: true, checked };
}

const WANTED_V2 = ["memory", "pids"] as const;

/**
 * The v2 controllers a child of `own` gets. Enabling them in `own`'s `cgroup.subtree_control` is refused while `own`
 * holds processes (the no-internal-process rule, except at the root); when the daemon is alone there (a systemd unit
 * with `Delegate=yes`), it moves itself into `own/berth-daemon` first, as systemd's delegation contract expects.
 */
function v2Controllers(dir: string): string[] {
  const available = (read(join(dir, "cgroup.controllers")) ?? "").trim().split(/\s+/).filter(Boolean);
  const enabled = () => (read(join(dir, "cgroup.subtree_control")) ?? "").trim().split(/\s+/).filter(Boolean);
  const missing = WANTED_V2.filter((c) => available.includes(c) && !enabled().includes(c));
  if (missing.length > 0) {
    const enable = () => write(join(dir, "cgroup.subtree_control"), missing.map((c) => `+${c}`).join(" "));
    if (!enable()) {
      const procs = (read(join(dir, "cgroup.procs")) ?? "").trim().split("\n").filter(Boolean);
      if (procs.length === 1 && Number(procs[0]) === process.pid) {
        const leaf = join(dir, "berth-daemon");
        if (existsSync(leaf) || tryMkdir(leaf)) {
          if (write(join(leaf, "cgroup.procs"), String(process.pid))) enable();
        }
      }
    }
  }
  return enabled();
}

const tryMkdir = (dir: string): boolean => {
  try {
    mkdirSync(dir);
    return true;
  } catch {
    return false;
  }
};

export function probeCgroups(): Pick<HostProbe, "v2" | "v1"> {
  const own = ownCgroups();
  let v2: V2Probe | null = null;
  const v1: V1Probe[] = [];
  for (const m of mounts()) {
    if (m.type === "cgroup2" && v2 === null) {
      const path = own.get("") ?? "/";
      const dir = join(m.point, path);
      const probe = tryChild(dir, (child) => existsSync(join(child, "cgroup.kill")));
      v2 = {
        mount: m.point,
        own: path,
        writable: probe.writable,
        hasKill: probe.checked,
        controllers: probe.writable ? v2Controllers(dir) : [],
      };
    } else if (m.type === "cgroup") {
      for (const controller of ["memory", "pids", "freezer"]) {
        if (!m.options.includes(controller) || v1.some((p) => p.controller === controller)) continue;
        const path = own.get(controller) ?? "/";
        v1.push({ controller, mount: m.point, own: path, writable: tryChild(join(m.point, path)).writable });
      }
    }
  }
  return { v2, v1 };
}

/** One cgroup of an instance and what it is there for. */
export interface InstanceCgroup {
  readonly dir: string;
  readonly hierarchy: "v1" | "v2";
  readonly roles: ReadonlyArray<"tracker" | "freezer" | "memory" | "pids">;
}

/** What an instance's cgroups are, persisted beside its files so a restarted daemon acts on the same ones. */
export interface CgroupRecord {
  readonly kill: KillMethod;
  readonly cgroups: readonly InstanceCgroup[];
}

const nodeDirOf = (place: LimitPlace, nodeTag: string) => join(place.mount, place.own, `berth-${nodeTag}`);

export function cgroupsFor(plan: ContainmentPlan, nodeTag: string, instanceId: string): CgroupRecord | null {
  if (plan.tracker === null) return null;
  const byDir = new Map<string, { hierarchy: "v1" | "v2"; roles: Array<"tracker" | "freezer" | "memory" | "pids"> }>();
  const add = (place: LimitPlace | null, role: "tracker" | "freezer" | "memory" | "pids") => {
    if (!place) return;
    const dir = join(nodeDirOf(place, nodeTag), instanceId);
    const entry = byDir.get(dir) ?? { hierarchy: place.hierarchy, roles: [] };
    entry.roles.push(role);
    byDir.set(dir, entry);
  };
  add(plan.tracker, "tracker");
  add(plan.freezer, "freezer");
  add(plan.memory, "memory");
  add(plan.pids, "pids");
  return { kill: plan.kill, cgroups: [...byDir].map(([dir, e]) => ({ dir, hierarchy: e.hierarchy, roles: e.roles })) };
}

/**
 * Makes the instance's cgroups afresh (a previous run's are removed first, so the OOM counter starts at 0) and sets
 * the limits. Throws naming the file when the kernel refuses one: an instance never runs with less containment than
 * the node's facts say.
 */
export function createCgroups(
  record: CgroupRecord,
  limits: { memoryBytes: number | null; pidsMax: number | null },
): void {
  for (const cg of record.cgroups) {
    releaseOne(cg.dir);
    const nodeDir = join(cg.dir, "..");
    mkdirSync(nodeDir, { recursive: true });
    if (cg.hierarchy === "v2") {
      // The node's directory holds no process, so its children can always be given what it was given.
      const available = (read(join(nodeDir, "cgroup.controllers")) ?? "").trim().split(/\s+/);
      const wanted = WANTED_V2.filter((c) => available.includes(c) && cg.roles.includes(c));
      if (wanted.length > 0) write(join(nodeDir, "cgroup.subtree_control"), wanted.map((c) => `+${c}`).join(" "));
    }
    mkdirSync(cg.dir);
    const set = (file: string, value: string, optional = false) => {
      if (!write(join(cg.dir, file), value) && !optional)
        throw new Error(`could not set ${join(cg.dir, file)} to ${value}`);
    };
    if (cg.roles.includes("memory") && limits.memoryBytes !== null) {
      if (cg.hierarchy === "v2") {
        set("memory.max", String(limits.memoryBytes));
        set("memory.swap.max", "0", true);
      } else {
        set("memory.limit_in_bytes", String(limits.memoryBytes));
        set("memory.memsw.limit_in_bytes", String(limits.memoryBytes), true);
      }
    }
    if (cg.roles.includes("pids") && limits.pidsMax !== null) set("pids.max", String(limits.pidsMax));
  }
}

const trackerOf = (record: CgroupRecord) => record.cgroups.find((c) => c.roles.includes("tracker"));

const procsOf = (dir: string): number[] =>
  (read(join(dir, "cgroup.procs")) ?? "")
    .split("\n")
    .filter(Boolean)
    .map(Number)
    .filter((pid) => {
      // A zombie runs nothing; its parent has yet to reap it.
      const stat = read(`/proc/${pid}/stat`);
      if (stat === undefined) return false;
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      return state !== "Z" && state !== "X";
    });

/** Every live process in the instance's tracking cgroup (none once it was removed). */
export function cgroupMembers(record: CgroupRecord): number[] {
  const tracker = trackerOf(record);
  return tracker ? procsOf(tracker.dir) : [];
}

export function signalCgroup(record: CgroupRecord, signal: NodeJS.Signals): void {
  for (const pid of cgroupMembers(record)) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone between the read and the signal
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Ends every process of the instance at once: `cgroup.kill`; else freeze the cgroup (so nothing forks while it is
 * being emptied), SIGKILL each member, thaw (a frozen process dies only once thawed); else a SIGKILL loop until the
 * cgroup is empty. Resolves whether it is empty.
 */
export async function killCgroup(record: CgroupRecord, deadlineMs = 5000): Promise<boolean> {
  const tracker = trackerOf(record);
  if (!tracker) return true;
  const end = Date.now() + deadlineMs;
  const freezer =
    record.cgroups.find((c) => c.roles.includes("freezer")) ?? (tracker.hierarchy === "v2" ? tracker : undefined);
  while (procsOf(tracker.dir).length > 0 && Date.now() < end) {
    if (record.kill === "cgroup.kill" && write(join(tracker.dir, "cgroup.kill"), "1")) {
      // The kernel signals every member; they leave the cgroup as they die.
    } else if (record.kill === "freeze-kill" && freezer) {
      const v2 = freezer.hierarchy === "v2";
      write(join(freezer.dir, v2 ? "cgroup.freeze" : "freezer.state"), v2 ? "1" : "FROZEN");
      for (let i = 0; i < 50 && !isFrozen(freezer); i++) await sleep(2);
      for (const pid of procsOf(tracker.dir)) killQuietly(pid);
      write(join(freezer.dir, v2 ? "cgroup.freeze" : "freezer.state"), v2 ? "0" : "THAWED");
    } else {
      for (const pid of procsOf(tracker.dir)) killQuietly(pid);
    }
    await sleep(10);
  }
  return procsOf(tracker.dir).length === 0;
}

function isFrozen(cg: InstanceCgroup): boolean {
  if (cg.hierarchy === "v2") return /^frozen 1$/m.test(read(join(cg.dir, "cgroup.events")) ?? "");
  return (read(join(cg.dir, "freezer.state")) ?? "").trim() === "FROZEN";
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** How many times the kernel's OOM killer ended a process of the instance because of its memory limit. */
export function oomKills(record: CgroupRecord): number {
  const memory = record.cgroups.find((c) => c.roles.includes("memory"));
  if (!memory) return 0;
  const text =
    memory.hierarchy === "v2" ? read(join(memory.dir, "memory.events")) : read(join(memory.dir, "memory.oom_control"));
  const m = /^oom_kill (\d+)$/m.exec(text ?? "");
  return m ? Number(m[1]) : 0;
}

function releaseOne(dir: string): void {
  if (!existsSync(dir)) return;
  // A v1 cgroup may hold children made by nobody but us; remove depth-first.
  try {
    for (const name of readdirSync(dir)) {
      const child = join(dir, name);
      if (statSync(child).isDirectory()) releaseOne(child);
    }
    rmdirSync(dir);
  } catch {
    // still holds a process (it will be retried at the next start or unload)
  }
}

/** Removes the instance's cgroups (only empty ones can go; the kernel refuses the others), and the node's once empty. */
export function releaseCgroups(record: CgroupRecord): void {
  for (const cg of record.cgroups) {
    releaseOne(cg.dir);
    try {
      rmdirSync(join(cg.dir, ".."));
    } catch {
      // other instances of this node still have theirs
    }
  }
}

/** What the kernel counted for an instance's cgroups: CPU time (v2 `cpu.stat`) and memory in use; null where unknown. */
export interface CgroupUsage {
  readonly cpuUsec: number | null;
  readonly memoryBytes: number | null;
}

/**
 * Issue 36 (`berth top`): the instance's usage read from its cgroups. CPU comes from the v2 tracker's `cpu.stat`
 * (`usage_usec`, there in every v2 cgroup); a v1 host's instances have no cpuacct cgroup of their own, so the caller
 * sums its members' /proc times instead. Memory: v2 `memory.current`, v1 `memory.usage_in_bytes`.
 */
export function cgroupUsage(record: CgroupRecord): CgroupUsage {
  const tracker = trackerOf(record);
  let cpuUsec: number | null = null;
  if (tracker?.hierarchy === "v2") {
    const m = /^usage_usec (\d+)$/m.exec(read(join(tracker.dir, "cpu.stat")) ?? "");
    if (m) cpuUsec = Number(m[1]);
  }
  const memory = record.cgroups.find((c) => c.roles.includes("memory"));
  let memoryBytes: number | null = null;
  if (memory) {
    const text = read(join(memory.dir, memory.hierarchy === "v2" ? "memory.current" : "memory.usage_in_bytes"));
    if (text !== undefined && /^\d+$/.test(text.trim())) memoryBytes = Number(text.trim());
  }
  return { cpuUsec, memoryBytes };
}
