import { describe, expect, it } from "vitest";
import { agentIdentity, exposureOf, type HostProbe, limitsOf, planContainment, type V1Probe } from "./containment.js";

const v1 = (controller: string, writable = true): V1Probe => ({
  controller,
  mount: `/sys/fs/cgroup/${controller}`,
  own: "/",
  writable,
});
const v2 = (over: Partial<NonNullable<HostProbe["v2"]>> = {}): NonNullable<HostProbe["v2"]> => ({
  mount: "/sys/fs/cgroup",
  own: "/",
  writable: true,
  hasKill: true,
  controllers: ["memory", "pids"],
  ...over,
});
const host = (over: Partial<HostProbe> = {}): HostProbe => ({
  v2: null,
  v1: [],
  netns: true,
  cgroupsWanted: true,
  netnsWanted: true,
  ...over,
});

describe("planContainment", () => {
  it("plain v2 with its controllers (a current distribution, Raspberry Pi OS): tracked, killed and limited by v2", () => {
    expect(planContainment(host({ v2: v2() }))).toMatchObject({
      kind: "cgroup-v2",
      kill: "cgroup.kill",
      memory: { hierarchy: "v2" },
      pids: { hierarchy: "v2" },
    });
  });

  it("a hybrid host (v2 with core files only beside v1 controllers): tracked by v2, limited by v1", () => {
    const plan = planContainment(
      host({
        v2: v2({ mount: "/sys/fs/cgroup/unified", controllers: [] }),
        v1: [v1("memory"), v1("pids"), v1("freezer")],
      }),
    );
    expect(plan).toMatchObject({
      kind: "cgroup-v2",
      kill: "cgroup.kill",
      tracker: { hierarchy: "v2", mount: "/sys/fs/cgroup/unified" },
      memory: { hierarchy: "v1" },
      pids: { hierarchy: "v1" },
    });
  });

  it("v2 without cgroup.kill (Linux before 5.14) freezes and kills", () => {
    expect(planContainment(host({ v2: v2({ hasKill: false }) })).kill).toBe("freeze-kill");
  });

  it("v1 only: the freezer tracks when writable, else a limit controller with a kill loop", () => {
    expect(planContainment(host({ v1: [v1("memory"), v1("freezer")] }))).toMatchObject({
      kind: "cgroup-v1",
      kill: "freeze-kill",
      tracker: { mount: "/sys/fs/cgroup/freezer" },
    });
    expect(planContainment(host({ v1: [v1("pids"), v1("freezer", false)] }))).toMatchObject({
      kind: "cgroup-v1",
      kill: "kill-loop",
      tracker: { mount: "/sys/fs/cgroup/pids" },
      freezer: null,
    });
  });

  it("nothing writable (not root, no delegation), or cgroups turned off: the process group only, with no limits", () => {
    const none = { kind: "process-group", kill: "process-group", tracker: null, memory: null, pids: null };
    expect(planContainment(host({ v2: v2({ writable: false }), v1: [v1("memory", false)] }))).toMatchObject(none);
    expect(planContainment(host({ v2: v2(), cgroupsWanted: false }))).toMatchObject(none);
  });

  it("the network namespace is used only when it works and is wanted", () => {
    expect(planContainment(host()).network).toBe("netns");
    expect(planContainment(host({ netns: false })).network).toBe("host");
    expect(planContainment(host({ netnsWanted: false })).network).toBe("host");
  });
});

describe("exposureOf: what the gate is fed", () => {
  it.each([
    ["none", "netns", "blocked", "none"],
    ["none", "netns", "reachable", "lan"],
    ["none", "host", "blocked", "egress"],
    ["none", "host", "reachable", "egress"],
    ["lan", "netns", "blocked", "egress"],
    ["lan", "host", "reachable", "egress"],
    ["egress", "netns", "blocked", "egress"],
  ] as const)(
    "a package declaring %s on a node with %s and local sockets %s is fed %s",
    (declared, network, localSockets, fed) => {
      expect(exposureOf(declared, { network, localSockets })).toBe(fed);
    },
  );
});

describe("limitsOf", () => {
  it("memory_mb 0 (undeclared) sets no memory limit; pids_max 0 sets no pids limit", () => {
    expect(limitsOf(0, 0)).toEqual({ memoryBytes: null, pidsMax: null });
    expect(limitsOf(32, 1024)).toEqual({ memoryBytes: 32 * 1024 * 1024, pidsMax: 1024 });
  });
});

describe("agentIdentity", () => {
  const base = { daemonUid: 0, configuredUser: null, resolved: null, allowRoot: false, canDropPrivileges: true };
  it("a daemon that is not root runs agents as itself, whatever node.json says", () => {
    expect(agentIdentity({ ...base, daemonUid: 1000, configuredUser: "berth-agent" })).toEqual({ kind: "daemon-user" });
  });
  it("a root daemon with no agent user refuses, naming both settings, unless root agents are allowed", () => {
    const refused = agentIdentity(base);
    expect(refused.kind).toBe("refused");
    expect(refused.kind === "refused" && refused.reason).toMatch(/agent_user.*allow_root_agents/);
    expect(agentIdentity({ ...base, allowRoot: true })).toEqual({ kind: "daemon-user" });
  });
  it("a root daemon with a resolvable unprivileged agent user drops to it", () => {
    expect(agentIdentity({ ...base, configuredUser: "nobody", resolved: { uid: 65534, gid: 65534 } })).toEqual({
      kind: "unprivileged",
      user: "nobody",
      uid: 65534,
      gid: 65534,
    });
  });
  it("an agent user that does not exist, is root, or cannot be dropped to refuses", () => {
    expect(agentIdentity({ ...base, configuredUser: "ghost" }).kind).toBe("refused");
    expect(agentIdentity({ ...base, configuredUser: "root", resolved: { uid: 0, gid: 0 } }).kind).toBe("refused");
    expect(
      agentIdentity({
        ...base,
        configuredUser: "nobody",
        resolved: { uid: 65534, gid: 65534 },
        canDropPrivileges: false,
      }).kind,
    ).toBe("refused");
  });
});
