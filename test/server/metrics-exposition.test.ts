/**
 * Metrics users can use (issue 36): `/metrics` passes `promtool check metrics` (Prometheus's own linter, from Debian's
 * `prometheus` package; scripts/test installs it) and the exposition rules it checks are also asserted here without
 * it — every family has HELP and TYPE, no gauge ends in `_total`, a counter does — and each agent has its own series
 * labelled by agent and target (state, restarts, last start, CPU seconds and memory from its cgroup), scraped from a real `berth serve` with a real node
 * daemon and a deployed mesh agent.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { controllerHome, serve } from "../cli/remote-support.js";
import { onPath } from "../cli/support.js";
import { cleanup, requireBuild } from "../mesh/harness.js";
import { repoRoot } from "../support/built.js";
import { killAll } from "../support/process.js";
import { apiFixture } from "./support.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

/** Prometheus's linter; in CI its absence fails (scripts/test installs Debian's `prometheus`), elsewhere it skips this part. */
function promtool(text: string): { ran: boolean; problems: string } {
  if (!onPath("promtool")) {
    if (process.env.CI === "true")
      throw new Error("promtool is not installed (Debian's prometheus package; scripts/test installs it)");
    return { ran: false, problems: "" };
  }
  try {
    execFileSync("promtool", ["check", "metrics"], { input: text, stdio: ["pipe", "pipe", "pipe"] });
    return { ran: true, problems: "" };
  } catch (error) {
    const e = error as { stdout?: Buffer; stderr?: Buffer };
    return { ran: true, problems: `${e.stdout?.toString() ?? ""}${e.stderr?.toString() ?? ""}` || String(error) };
  }
}

/** The exposition format's rules promtool checks, on their own: HELP and TYPE per family, `_total` only on counters. */
function expositionProblems(text: string): string[] {
  const problems: string[] = [];
  const help = new Set<string>();
  const type = new Map<string, string>();
  for (const line of text.split("\n")) {
    const h = /^# HELP (\S+) \S/.exec(line);
    if (h) help.add(h[1] as string);
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) type.set(t[1] as string, t[2] as string);
  }
  for (const [name, kind] of type) {
    if (!help.has(name)) problems.push(`${name}: no HELP`);
    if (kind !== "counter" && name.endsWith("_total")) problems.push(`${name}: a ${kind} named *_total`);
    if (kind === "counter" && !name.endsWith("_total")) problems.push(`${name}: a counter without _total`);
  }
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const name = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)?.[1] ?? "";
    const family = [...type.keys()].find(
      (f) =>
        name === f ||
        ((type.get(f) === "histogram" || type.get(f) === "summary") &&
          /^(.*)_(bucket|sum|count)$/.exec(name)?.[1] === f),
    );
    if (family === undefined) problems.push(`${name}: a sample without TYPE`);
  }
  return problems;
}

function sample(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("/metrics as Prometheus reads it", () => {
  it("passes promtool check metrics and the exposition rules: HELP and TYPE everywhere, no gauge named *_total", async () => {
    const fx = await apiFixture();
    const text = (await fx.call("GET", "/metrics")).text;
    expect(expositionProblems(text)).toEqual([]);
    expect(text).toMatch(/^# TYPE berth_nodejs_active_handles gauge$/m);
    expect(text).not.toContain("berth_nodejs_active_handles_total");
    const lint = promtool(text);
    expect(lint.problems).toBe("");
  });

  it("has a series per agent, labelled by agent and target: its state, restarts and last start", {
    timeout: 120_000,
  }, async () => {
    requireBuild();
    const before = Date.now();
    const { home } = await controllerHome();
    const { url } = await serve(home);
    const token = readFileSync(join(home, "api.token"), "utf8").trim();
    const scrape = async () => {
      const r = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(r.status).toBe(200);
      return r.text();
    };
    const text = await scrape();
    expect(sample(text, 'berth_agent_state{agent="scout",target="mesh",state="running"}')).toBe(1);
    expect(sample(text, 'berth_agent_restarts{agent="scout",target="mesh"}')).toBe(0);
    const started = sample(text, 'berth_agent_last_start_timestamp_seconds{agent="scout",target="mesh"}') ?? 0;
    expect(started * 1000).toBeGreaterThanOrEqual(before - 60_000);
    expect(started * 1000).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(expositionProblems(text)).toEqual([]);
    expect(promtool(text).problems).toBe("");

    // Issue 36, `berth top` in /metrics: the running agent's CPU time and memory from its cgroup, by agent and target.
    const deadline = Date.now() + 30_000;
    let usage = text;
    while (
      sample(usage, 'berth_agent_memory_bytes{agent="scout",target="mesh"}') === undefined &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 500));
      usage = await scrape();
    }
    expect(sample(usage, 'berth_agent_memory_bytes{agent="scout",target="mesh"}'), usage).toBeGreaterThan(0);
    expect(sample(usage, 'berth_agent_cpu_seconds_total{agent="scout",target="mesh"}'), usage).toBeGreaterThanOrEqual(
      0,
    );
    expect(usage).toMatch(/^# TYPE berth_agent_cpu_seconds_total counter$/m);
    expect(expositionProblems(usage)).toEqual([]);
    expect(promtool(usage).problems).toBe("");

    // The Grafana dashboard in docs/ asks only for series this server serves.
    const dashboard = readFileSync(join(repoRoot, "docs/grafana-dashboard.json"), "utf8");
    const asked = [...new Set(dashboard.match(/berth_[a-z_]+/g) ?? [])];
    const again = await scrape(); // the first scrape is in the request histogram now
    expect(asked.length).toBeGreaterThan(5);
    for (const name of asked)
      expect(again, `docs/grafana-dashboard.json asks for ${name}`).toMatch(new RegExp(`^${name}[{ ]`, "m"));
  });
});
