/**
 * How this node launches and contains an instance (issue 15, docs/concepts.md "Confinement"): probed once per daemon
 * start, planned by `core/node/containment.ts`, then used by the runtime for every start, liveness check, stop and
 * removal. One object per daemon.
 *
 *   start:   cgroupsFor + createCgroups (limits) ─▶ wrapper joins them ─▶ unshare -n + berth-seal (network "none")
 *            ─▶ setpriv (the agent user, no_new_privs)
 *   alive:   any live member of the process group or of the tracking cgroup
 *   stop:    TERM to both ─▶ grace ─▶ cgroup.kill / freeze-kill / kill loop, and SIGKILL to the group
 *   exit:    the kernel's OOM counter says whether the memory limit ended it
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { Network } from "../../core/governance/policy.js";
import {
  type AgentIdentity,
  agentIdentity,
  type ContainmentPlan,
  exposureOf,
  limitsOf,
  planContainment,
} from "../../core/node/containment.js";
import { wrapperScript } from "../../core/node/containment-script.js";
import {
  type CgroupRecord,
  type CgroupUsage,
  cgroupMembers,
  cgroupsFor,
  cgroupUsage,
  createCgroups,
  killCgroup,
  oomKills,
  probeCgroups,
  releaseCgroups,
  signalCgroup,
} from "./cgroup.js";
import type { NodeConfig } from "./config.js";
import { dropPrefix, NO_NEW_PRIVS_PREFIX, ROOT_AGENT_PREFIX, resolveUser, setprivAvailable } from "./confine-user.js";
import { probeHideCgroupsPrefix, probeNetnsPrefix } from "./netns.js";
import { probeSeal } from "./seal.js";

const RECORD = "cgroups.json";

export interface Launch {
  /** The `sh -c` script that leads the group. */
  readonly script: string;
  /** argv between the status file and the program: network namespace, then the privilege drop. */
  readonly prefix: readonly string[];
  /** The agent's uid and gid when it runs as someone else than the daemon (its directories are given to it). */
  readonly owner: { readonly uid: number; readonly gid: number } | null;
}

export class Confinement {
  private constructor(
    readonly plan: ContainmentPlan,
    private readonly nodeTag: string,
    private readonly netnsPrefix: readonly string[] | null,
    readonly agent: AgentIdentity,
    private readonly pidsMax: number,
    /** Issue 33 item 7: the seal helper (seal.ts), when the node built one and it holds. */
    private readonly seal: string | null,
    /** Issue 33 item 12: setpriv is here, so every agent gets no_new_privs. */
    private readonly noNewPrivs: boolean,
    /** Issue 33 item 11: root agents see no cgroup file system and lack CAP_SYS_ADMIN (netns.ts `probeHideCgroupsPrefix`). */
    private readonly rootAgent: { readonly hide: readonly string[] | null } | null,
  ) {}

  /** Probes this host. `nodeId` names the node's cgroup directory, so two daemons on one host never share one. */
  static probe(
    config: Pick<NodeConfig, "agent_user" | "allow_root_agents" | "confinement">,
    nodeId: string,
    dataDir: string,
  ): Confinement {
    const uid = process.getuid?.() ?? -1;
    const cgroupsWanted = config.confinement.cgroups !== "off" && process.platform === "linux";
    const netnsWanted = config.confinement.network_namespace === "auto" && process.platform === "linux";
    const probed = cgroupsWanted ? probeCgroups() : { v2: null, v1: [] };
    // `v1`: an operator's choice (or a test's, on a hybrid host) to contain with the v1 controllers only.
    const cgroups = config.confinement.cgroups === "v1" ? { ...probed, v2: null } : probed;
    const netnsPrefix = netnsWanted ? probeNetnsPrefix(uid) : null;
    // The seal matters only behind a namespace: without one a `none` package is fed `egress` anyway.
    const seal = netnsPrefix !== null && config.confinement.local_sockets === "auto" ? probeSeal(dataDir, uid) : null;
    const plan = planContainment({
      ...cgroups,
      netns: netnsPrefix !== null,
      sealed: seal !== null,
      cgroupsWanted,
      netnsWanted,
    });
    const setpriv = process.platform === "linux" && setprivAvailable();
    const agent = agentIdentity({
      daemonUid: uid,
      configuredUser: config.agent_user,
      resolved: config.agent_user !== null && uid === 0 ? resolveUser(config.agent_user) : null,
      allowRoot: config.allow_root_agents,
      canDropPrivileges: uid === 0 && config.agent_user !== null ? setpriv : false,
    });
    const rootAgent =
      uid === 0 && agent.kind === "daemon-user"
        ? { hide: plan.kind === "process-group" ? null : probeHideCgroupsPrefix() }
        : null;
    return new Confinement(
      plan,
      nodeId.slice(0, 12),
      netnsPrefix,
      agent,
      config.confinement.pids_max,
      seal,
      setpriv,
      rootAgent,
    );
  }

  /** The facts' view (spec/mesh.md §6): which containment, which limits, and whether `network: "none"` holds. */
  facts(): JsonObject {
    const where = (p: ContainmentPlan["memory"]) =>
      p === null ? null : p.hierarchy === "v2" ? "cgroup-v2" : "cgroup-v1";
    return {
      kind: this.plan.kind,
      kill: this.plan.kill,
      memory_limit: where(this.plan.memory),
      pids_limit: where(this.plan.pids),
      // Issue 33 item 7: `enforced` means no IP route and no local socket (docs/mesh.md "What network none means").
      network_none: this.plan.network === "netns" && this.plan.localSockets === "blocked" ? "enforced" : "not-enforced",
      network_namespace: this.plan.network === "netns",
      local_sockets: this.plan.network === "netns" ? this.plan.localSockets : "reachable",
      // What the gate is fed for a `network: "none"` package here: `none`, `lan` (namespace only) or `egress`.
      network_none_judged_as: this.exposure("none"),
      no_new_privs: this.noNewPrivs ? "enforced" : "not-enforced",
      root_agents:
        this.rootAgent === null
          ? null
          : this.rootAgent.hide !== null && this.noNewPrivs
            ? "held-in-cgroup"
            : "may-leave-cgroup",
      agent_user:
        this.agent.kind === "unprivileged" ? this.agent.user : this.agent.kind === "daemon-user" ? "daemon" : null,
    };
  }

  /** What the gate is fed for a package declaring `declared` (core/node/containment.ts `exposureOf`). */
  exposure(declared: Network): Network {
    return exposureOf(declared, this.plan);
  }

  /**
   * Makes the instance's cgroups (with its limits) and the launch that puts its wrapper in them. Throws when agents
   * may not run here (a root daemon without an agent user) or when the kernel refuses a cgroup file.
   */
  prepare(
    instanceDir: string,
    instanceId: string,
    launch: { readonly network: Network; readonly memory_mb: number },
  ): Launch {
    if (this.agent.kind === "refused") throw new Error(this.agent.reason);
    const record = cgroupsFor(this.plan, this.nodeTag, instanceId);
    if (record) {
      createCgroups(record, limitsOf(launch.memory_mb, this.pidsMax));
      writeFileSync(join(instanceDir, RECORD), `${JSON.stringify(record)}\n`, { mode: 0o600 });
    }
    const tracker = record?.cgroups.find((c) => c.roles.includes("tracker"));
    const script = wrapperScript({
      join: (record?.cgroups ?? []).map((c) => join(c.dir, "cgroup.procs")),
      killFile: record?.kill === "cgroup.kill" && tracker ? join(tracker.dir, "cgroup.kill") : null,
      procsFile: tracker && record?.kill !== "cgroup.kill" ? join(tracker.dir, "cgroup.procs") : null,
    });
    return {
      script,
      prefix: this.prefix(launch.network),
      owner: this.agent.kind === "unprivileged" ? { uid: this.agent.uid, gid: this.agent.gid } : null,
    };
  }

  /**
   * The argv before an agent's program (its entry, and its health check too): the network namespace and the seal for
   * `network: "none"` (the seal before setpriv: its file is in a directory only the daemon's user may enter), then the
   * privilege drop, or for an agent of the daemon's own user only no_new_privs.
   */
  prefix(network: Network): string[] {
    const prefix: string[] = [...(this.rootAgent?.hide ?? [])];
    if (network === "none" && this.netnsPrefix) {
      prefix.push(...this.netnsPrefix);
      if (this.seal) prefix.push(this.seal);
    }
    if (this.agent.kind === "unprivileged") prefix.push(...dropPrefix(this.agent.uid, this.agent.gid));
    else if (this.noNewPrivs) prefix.push(...(this.rootAgent ? ROOT_AGENT_PREFIX : NO_NEW_PRIVS_PREFIX));
    return prefix;
  }

  private record(instanceDir: string): CgroupRecord | null {
    const path = join(instanceDir, RECORD);
    if (!existsSync(path)) return null;
    try {
      return JSON.parse(readFileSync(path, "utf8")) as CgroupRecord;
    } catch {
      return null;
    }
  }

  /** Live processes in the instance's cgroup (a `setsid` process that left the group included). */
  members(instanceDir: string): number[] {
    const record = this.record(instanceDir);
    return record ? cgroupMembers(record) : [];
  }

  /** Issue 36: what the kernel counted for the instance's cgroups (null when it has none). */
  usage(instanceDir: string): CgroupUsage | null {
    const record = this.record(instanceDir);
    return record ? cgroupUsage(record) : null;
  }

  signal(instanceDir: string, signal: NodeJS.Signals): void {
    const record = this.record(instanceDir);
    if (record) signalCgroup(record, signal);
  }

  /** Ends every process in the instance's cgroup; resolves whether it is empty. */
  killAll(instanceDir: string): Promise<boolean> {
    const record = this.record(instanceDir);
    return record ? killCgroup(record) : Promise.resolve(true);
  }

  /** Whether the kernel's OOM killer ended a process of this run (the counter starts at 0 with each start's cgroup). */
  memoryKilled(instanceDir: string): boolean {
    const record = this.record(instanceDir);
    return record !== null && oomKills(record) > 0;
  }

  release(instanceDir: string): void {
    const record = this.record(instanceDir);
    if (record) releaseCgroups(record);
  }
}
