import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { wrapperScript } from "./containment-script.js";

describe("wrapperScript", () => {
  const cases = {
    "no cgroup": { join: [], killFile: null, procsFile: null },
    "cgroup v2 with cgroup.kill": {
      join: ["/sys/fs/cgroup/a b/cgroup.procs"],
      killFile: "/sys/fs/cgroup/a b/cgroup.kill",
      procsFile: null,
    },
    "cgroup v1 kill loop": {
      join: ["/x/it's/cgroup.procs", "/y/cgroup.procs"],
      killFile: null,
      procsFile: "/x/it's/cgroup.procs",
    },
  };
  it.each(Object.entries(cases))("is valid POSIX sh (%s), paths with spaces and quotes included", (_name, input) => {
    const r = spawnSync("/bin/sh", ["-n", "-c", wrapperScript(input)]);
    expect(r.status).toBe(0);
  });

  it("joins every cgroup before it forks the entry, and reaps only after a natural exit (not a stop)", () => {
    const s = wrapperScript(cases["cgroup v2 with cgroup.kill"]);
    expect(s.indexOf("cgroup.procs")).toBeLessThan(s.indexOf('"$@" &'));
    expect(s).toMatch(/if \[ -z "\$t" \]; then echo 1 > '\/sys\/fs\/cgroup\/a b\/cgroup.kill'/);
  });
});
