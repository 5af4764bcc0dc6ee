/**
 * Issue 17, agent secrets are secrets: a full `berth up` session deploys two agents whose env value comes from
 * `valueFrom: {env}` and `valueFrom: {file}`, then every verb that shows an agent, the API, `berth agent replace`,
 * the chain exports of the controller and of every node, and `berth down`. The planted values reach the agents
 * (/proc/<pid>/environ) and are found, afterwards, only where docs/security.md says they are kept: the node.db (and
 * its WAL) of the node that runs the agent. Not in any output, answer, export or other file under the home.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadKeyFile } from "../../src/keys/key-file.js";
import { processesWithEnv, requireBuild } from "../mesh/harness.js";
import { probePackage } from "../mesh-controller/support/package.js";
import { berthBin } from "../support/built.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { processesUnder } from "../support/processes-under.js";

const home = mkdtempSync(join(tmpdir(), "berth-channel-home-"));
const outside = mkdtempSync(join(tmpdir(), "berth-channel-outside-"));
afterAll(() => {
  killAll();
  for (const pid of processesUnder(home)) process.kill(pid, "SIGKILL");
  rmSync(home, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** What docs/security.md ("Agent secrets") lists as the one place a secret env value is kept under a home. */
const DOCUMENTED = /^up\/nodes\/[^/]+\/node\.db(-wal)?$/;

describe("agent secrets in a full berth up session", () => {
  it("reach the agents and are found only in the node.db of the node running each agent, never in an output, answer or chain", async () => {
    requireBuild();
    const fromEnv = `ENVSECRET-${randomBytes(12).toString("hex")}`;
    const fromFile = `FILESECRET-${randomBytes(12).toString("hex")}`;
    const env = { BERTH_HOME: home };
    const outputs: string[] = [];
    const berth = async (args: string[], extra: NodeJS.ProcessEnv = {}) => {
      const r = await runNode([berthBin(), ...args], { env: { ...env, ...extra } });
      outputs.push(`$ berth ${args.join(" ")}\n${r.stdout}\n${r.stderr}`);
      return r;
    };

    // While berth up runs, `berth deploy` goes through its server (issue 21), which reads `valueFrom: {env}` in its own
    // environment: the planted variable is berth up's, and the deploying CLI's too.
    const up = spawnNode(
      [
        berthBin(),
        "up",
        "--data-dir",
        home,
        "--no-kubernetes",
        "--port",
        String(20_000 + Math.floor(Math.random() * 20_000)),
      ],
      { env: { ...env, CHANNEL_PLANTED: fromEnv } },
    );
    await up.waitForOutput("ready; press Ctrl-C", 120_000);
    const dashboard = /dashboard: (http:\/\/127\.0\.0\.1:\d+)\/#token=([A-Za-z0-9_-]+)/.exec(up.output());
    expect(dashboard, up.output()).not.toBeNull();
    const [, base, token] = dashboard as RegExpExecArray;

    // Two agents of a package signed with berth up's own signer; their specs and the secret file live outside the home.
    const pkgDir = join(outside, "courier-pkg");
    probePackage(pkgDir, loadKeyFile(join(home, "keys", "signer.key")), {
      name: "courier",
      script: "#!/bin/sh\necho courier-up\nexec sleep 300\n",
    });
    writeFileSync(join(outside, "ledger.secret"), `${fromFile}\n`, { mode: 0o600 });
    const spec = (name: string, valueFrom: object) =>
      JSON.stringify({
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name },
        spec: { target: "mesh", package: pkgDir, config: { env: { RACE_MARK: { valueFrom } } } },
      });
    writeFileSync(join(outside, "courier.json"), spec("courier", { env: "CHANNEL_PLANTED" }));
    writeFileSync(join(outside, "ledger.json"), spec("ledger", { file: "./ledger.secret" }));

    writeFileSync(join(outside, "orphan.json"), spec("orphan", { env: "CHANNEL_UNSET" }));
    const missing = await berth(["deploy", join(outside, "orphan.json"), "--json"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stdout + missing.stderr).toContain(
      "spec.config.env.RACE_MARK.valueFrom.env: environment variable CHANNEL_UNSET is not set",
    );
    for (const name of ["courier", "ledger"]) {
      const r = await berth(["deploy", join(outside, `${name}.json`), "--json"], { CHANNEL_PLANTED: fromEnv });
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    }
    expect(
      processesWithEnv(`RACE_MARK=${fromEnv}`).length,
      "the courier agent got the value from the deploying environment",
    ).toBeGreaterThan(0);
    expect(
      processesWithEnv(`RACE_MARK=${fromFile}`).length,
      "the ledger agent got the value from the file",
    ).toBeGreaterThan(0);

    // Every way to look at the agents, the CLI and the API alike.
    for (const args of [
      ["agents", "--json"],
      ["agents"],
      ["agent", "status", "courier", "--json"],
      ["agent", "logs", "courier"],
      ["instances", "--json"],
      ["nodes", "list", "--json"],
      ["doctor", "--json"],
    ]) {
      await berth(args);
    }
    const replaced = await berth(["agent", "replace", "ledger", "--json"]);
    expect(replaced.code, replaced.stderr).toBe(0);
    for (const path of [
      "/agents",
      "/agents/courier",
      "/agents/ledger",
      "/agents/courier/logs",
      "/instances",
      "/nodes",
      "/placements",
      "/audit/events",
      "/audit/export",
    ]) {
      const r = await fetch(`${base}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
      outputs.push(`GET ${path} ${r.status}\n${await r.text()}`);
    }
    // Every chain: the controller's and each node's, exported.
    const dbs = filesUnder(home).filter((f) => /(controller|node|k8s)\.db$/.test(f));
    expect(dbs.filter((f) => f.endsWith("node.db"))).toHaveLength(3);
    for (const db of dbs) {
      const exported = await berth(["audit", "export", "--json", "--db", db]);
      expect(exported.code, exported.stderr).toBe(0);
    }

    up.child.kill("SIGINT");
    expect((await up.exited()).code, up.errors()).toBe(0);
    outputs.push(up.output(), up.errors());
    expect(processesUnder(home)).toEqual([]);

    const all = outputs.join("\n");
    expect(all).toContain("RACE_MARK"); // the name may show; the value never
    expect(all.includes(fromEnv), "the env-sourced value in an output, answer or export").toBe(false);
    expect(all.includes(fromFile), "the file-sourced value in an output, answer or export").toBe(false);

    const holders = (needle: string) =>
      filesUnder(home)
        .filter((f) => statSync(f).size > 0 && readFileSync(f).includes(Buffer.from(needle)))
        .map((f) => relative(home, f));
    for (const needle of [fromEnv, fromFile]) {
      const found = holders(needle);
      expect(found.length, `the grep finds ${needle.slice(0, 10)}… where the node keeps it`).toBeGreaterThan(0);
      expect(
        found.filter((f) => !DOCUMENTED.test(f)),
        "files holding a secret that docs/security.md does not list",
      ).toEqual([]);
      // One node runs each agent: its node.db, nobody else's.
      expect(new Set(found.map((f) => f.split("/")[2])).size).toBe(1);
    }
  }, 300_000);
});
