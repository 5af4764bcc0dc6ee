/**
 * How a node contains what an agent runs (issue 15, "Confinement"), decided from what the shell probed. Pure: the
 * shell reads /proc/self/mountinfo, /proc/self/cgroup and tries the files; this module says what to use.
 *
 * Structural rules:
 * - an instance is tracked by a cgroup whenever the node can make one, because a cgroup is the only thing a
 *   double-forked, `setsid` process cannot leave; v2 (with `cgroup.kill`) is preferred over v1 (freezer, else any
 *   writable v1 controller plus a kill loop), and only then the process group;
 * - limits are placed where the controller is: a hybrid host (v2 holding only core files beside v1 controllers, as
 *   on this project's build machine) takes the memory and pids limits from v1 even when v2 tracks the instance;
 * - the gate is fed the exposure the runtime really gives: `none` only when a new network namespace cuts IP and the
 *   seccomp seal (mesh/node/seal.ts, issue 33 item 7) cuts local sockets; `lan` when only the namespace holds (the
 *   agent still reaches this machine's unix sockets); `egress` for every native process otherwise (a native process
 *   can reach whatever the host can).
 */
import type { Network } from "../governance/policy.js";

/** What the facts say about a node's containment (spec/mesh.md §6, §13). */
export type ContainmentKind = "cgroup-v2" | "cgroup-v1" | "process-group";

/** How every process of an instance is ended at once. */
export type KillMethod = "cgroup.kill" | "freeze-kill" | "kill-loop" | "process-group";

export interface V2Probe {
  /** Where the v2 hierarchy is mounted (`/sys/fs/cgroup` or `/sys/fs/cgroup/unified`). */
  readonly mount: string;
  /** The daemon's own cgroup, relative to the mount (`/` at the root). */
  readonly own: string;
  /** Could the daemon create a child of its own cgroup? */
  readonly writable: boolean;
  /** A child has `cgroup.kill` (Linux ≥ 5.14). */
  readonly hasKill: boolean;
  /** Controllers a child of the daemon's cgroup can be given (the parent's `cgroup.controllers` after enabling). */
  readonly controllers: readonly string[];
}

export interface V1Probe {
  /** The controller's name (`memory`, `pids`, `freezer`). */
  readonly controller: string;
  readonly mount: string;
  readonly own: string;
  readonly writable: boolean;
}

export interface HostProbe {
  readonly v2: V2Probe | null;
  readonly v1: readonly V1Probe[];
  /** `unshare -n true` worked (root, or the capability). */
  readonly netns: boolean;
  /** Issue 33 item 7: the seal helper was built and its check passed (socket(AF_UNIX) refused under it). */
  readonly sealed?: boolean;
  /** node.json `confinement`: an operator (or a test) can turn either off. */
  readonly cgroupsWanted: boolean;
  readonly netnsWanted: boolean;
}

export type LimitPlace =
  | { readonly hierarchy: "v2"; readonly mount: string; readonly own: string }
  | { readonly hierarchy: "v1"; readonly mount: string; readonly own: string };

export interface ContainmentPlan {
  readonly kind: ContainmentKind;
  readonly kill: KillMethod;
  /** The hierarchy whose `cgroup.procs` lists every process of an instance; null for `process-group`. */
  readonly tracker: LimitPlace | null;
  /** v1 hierarchies an instance also joins (a freezer for `freeze-kill`, the limit controllers). */
  readonly freezer: LimitPlace | null;
  readonly memory: LimitPlace | null;
  readonly pids: LimitPlace | null;
  /** `netns`: a `network: "none"` package runs in a new network namespace; `host`: nothing is enforced. */
  readonly network: "netns" | "host";
  /** Issue 33 item 7: `blocked` when a `none` package also runs under the seal (no unix, vsock … sockets). */
  readonly localSockets: "blocked" | "reachable";
}

const v1Place = (p: V1Probe | undefined): LimitPlace | null =>
  p?.writable ? { hierarchy: "v1", mount: p.mount, own: p.own } : null;

export function planContainment(probe: HostProbe): ContainmentPlan {
  const network = probe.netnsWanted && probe.netns ? "netns" : "host";
  const localSockets = probe.sealed === true ? "blocked" : "reachable";
  if (!probe.cgroupsWanted)
    return {
      kind: "process-group",
      kill: "process-group",
      tracker: null,
      freezer: null,
      memory: null,
      pids: null,
      network,
      localSockets,
    };
  const v1 = (name: string) => probe.v1.find((p) => p.controller === name);
  const v2 = probe.v2?.writable ? probe.v2 : null;
  const v2Place: LimitPlace | null = v2 ? { hierarchy: "v2", mount: v2.mount, own: v2.own } : null;
  const limit = (name: string): LimitPlace | null =>
    v2Place && v2?.controllers.includes(name) ? v2Place : v1Place(v1(name));
  const memory = limit("memory");
  const pids = limit("pids");
  if (v2Place && v2) {
    // Without cgroup.kill a v2 cgroup is still frozen and killed (cgroup.freeze exists since 5.2).
    return {
      kind: "cgroup-v2",
      kill: v2.hasKill ? "cgroup.kill" : "freeze-kill",
      tracker: v2Place,
      freezer: null,
      memory,
      pids,
      network,
      localSockets,
    };
  }
  const freezer = v1Place(v1("freezer"));
  const tracker = freezer ?? pids ?? memory;
  if (tracker)
    return {
      kind: "cgroup-v1",
      kill: freezer ? "freeze-kill" : "kill-loop",
      tracker,
      freezer,
      memory,
      pids,
      network,
      localSockets,
    };
  return {
    kind: "process-group",
    kill: "process-group",
    tracker: null,
    freezer: null,
    memory: null,
    pids: null,
    network,
    localSockets,
  };
}

/** The network exposure the runtime really gives a package that declares `declared` (fed to the gate, §7). */
export function exposureOf(declared: Network, plan: Pick<ContainmentPlan, "network" | "localSockets">): Network {
  if (declared !== "none" || plan.network !== "netns") return "egress";
  // Issue 33 item 7: without the seal the namespace still lets the agent reach this machine's unix sockets.
  return plan.localSockets === "blocked" ? "none" : "lan";
}

/** The limits an instance's cgroups get: memory from the package's `resources.memory_mb` (0 = undeclared). */
export function limitsOf(
  memoryMb: number,
  pidsMax: number,
): { readonly memoryBytes: number | null; readonly pidsMax: number | null } {
  return { memoryBytes: memoryMb > 0 ? memoryMb * 1024 * 1024 : null, pidsMax: pidsMax > 0 ? pidsMax : null };
}

/** Who an agent runs as. */
export type AgentIdentity =
  | { readonly kind: "daemon-user" }
  | { readonly kind: "unprivileged"; readonly user: string; readonly uid: number; readonly gid: number }
  | { readonly kind: "refused"; readonly reason: string };

/**
 * A root daemon runs agents as the configured unprivileged user, or refuses unless the operator allowed root agents.
 * A daemon that is not root runs agents as itself (it cannot become anyone else, and it holds nothing root holds).
 */
export function agentIdentity(input: {
  readonly daemonUid: number;
  readonly configuredUser: string | null;
  readonly resolved: { readonly uid: number; readonly gid: number } | null;
  readonly allowRoot: boolean;
  readonly canDropPrivileges: boolean;
}): AgentIdentity {
  if (input.daemonUid !== 0) return { kind: "daemon-user" };
  if (input.configuredUser !== null) {
    if (input.resolved === null)
      return {
        kind: "refused",
        reason: `node.json agent_user ${input.configuredUser} does not exist on this host; create it (berth node init --agent-user ${input.configuredUser} --create-agent-user) or fix node.json`,
      };
    if (input.resolved.uid === 0)
      return input.allowRoot
        ? { kind: "daemon-user" }
        : {
            kind: "refused",
            reason: `node.json agent_user ${input.configuredUser} is root (uid 0); name an unprivileged user`,
          };
    if (!input.canDropPrivileges)
      return {
        kind: "refused",
        reason:
          "setpriv (util-linux) is not installed, so this root daemon cannot run agents as node.json agent_user; install util-linux",
      };
    return { kind: "unprivileged", user: input.configuredUser, uid: input.resolved.uid, gid: input.resolved.gid };
  }
  if (input.allowRoot) return { kind: "daemon-user" };
  return {
    kind: "refused",
    reason:
      "this node daemon runs as root and node.json names no agent_user: agents would run as root; set agent_user (berth node init --agent-user NAME --create-agent-user) or allow_root_agents: true",
  };
}
