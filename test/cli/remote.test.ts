/**
 * The CLI from another machine (issue 13) and beside a running server (issue 21), with real processes: a node daemon,
 * `berth serve` on the controller's home, and `berth` run as a client with its own home and a context. Every verb is
 * run both ways — through the context and on the controller's files with --local — and must give the same document
 * and the same exit status. Judged from outside: the documents, the exit statuses, and the controller's audit chain
 * (a call that went through the server is an `api.call` there; one on the files is not).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanup, requireBuild, tempDir, waitFor } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { clientHome, controllerHome, run, serve } from "./remote-support.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

/** The fields that do not change between two calls a moment apart. */
const stable = {
  agents: (d: JsonObject) =>
    (d.agents as JsonObject[]).map((a) => [a.name, a.target, a.state, a.instance, a.row, a.next]),
  instances: (d: JsonObject) =>
    (d.placements as JsonObject[]).map((p) => [p.instance_id, p.name, p.node_id, p.decision_id, p.state, p.placed_ms]),
  nodes: (d: JsonObject) =>
    (d.targets as JsonObject[]).map((t) => [
      t.node_id,
      t.addr,
      t.tier,
      t.key,
      (t.facts as JsonObject | null)?.arch ?? null,
    ]),
  same: (d: JsonObject) => d,
};

describe("berth through a context, side by side with the local files", () => {
  it("prints the same documents and exit statuses for every controller verb, and says so when the server is gone", async () => {
    requireBuild();
    const { home, env, spec } = await controllerHome();
    const { proc, url } = await serve(home);
    const client = clientHome(home);
    const added = await run(client.env, [
      "context",
      "add",
      "lab",
      "--server",
      url,
      "--token-file",
      client.tokenFile,
      "--use",
      "--json",
    ]);
    expect([added.code, added.doc.current, added.doc.checked], added.stderr).toEqual([0, true, true]);
    expect((await run(client.env, ["context", "current", "--json"])).doc).toMatchObject({
      kind: "server",
      server: url,
      via: "context lab",
    });

    const instance = String(
      ((await run(env, ["agents", "--json", "--local"])).doc.agents as JsonObject[])[0]?.instance,
    );
    const cases: Array<{ args: string[]; view: (d: JsonObject) => unknown; code: number; kind?: string }> = [
      // --refresh (issue 35): on the files a list answers from the store unless asked to look; a server answers live.
      { args: ["agents", "--refresh"], view: stable.agents, code: 0 },
      { args: ["agent", "status", "scout"], view: (d) => [d.name, d.state, d.instance, d.row], code: 0 },
      { args: ["instances", "--refresh"], view: stable.instances, code: 0 },
      // --refresh: a one-shot process knows a node's facts and liveness only once it describes it; a server keeps them fresh.
      { args: ["nodes", "list", "--refresh"], view: stable.nodes, code: 0 },
      { args: ["unsettled"], view: stable.same, code: 0 },
      {
        args: ["instance", "status", instance],
        view: (d) => [
          d.ok,
          d.kind,
          d.instance_id,
          (d.result as JsonObject).status && ((d.result as JsonObject).status as JsonObject).state,
        ],
        code: 0,
      },
      {
        args: ["instance", "logs", instance, "--tail", "1"],
        view: (d) => [d.kind, (d.result as JsonObject).stdout],
        code: 0,
      },
      { args: ["agent", "logs", "scout"], view: (d) => [d.agent, d.instance, d.stdout], code: 0 },
      { args: ["agent", "status", "nobody"], view: (d) => [d.ok, d.kind, d.error], code: 1, kind: "unknown_agent" },
      {
        args: ["instance", "status", "probe-000000000000"],
        view: (d) => [d.ok, d.kind, d.error],
        code: 1,
        kind: "unknown_instance",
      },
      {
        args: ["nodes", "tier", "0123456789abcdef0123456789abcdef", "pinned"],
        view: (d) => [d.ok, d.kind, d.error],
        code: 1,
      },
      {
        args: ["place", join(home, "pkg"), "--name", "scout"],
        view: (d) => [d.ok, d.kind, d.code],
        code: 1,
        kind: "refused",
      },
      { args: ["deploy", spec], view: (d) => [d.ok, d.agent, d.outcome, d.instance, d.row], code: 0 },
    ];
    for (const c of cases) {
      const remote = await run(client.env, [...c.args, "--json"]);
      const local = await run(env, [...c.args, "--json", "--local"]);
      const what = `berth ${c.args.join(" ")}`;
      expect([remote.code, local.code], `${what}: remote ${remote.stderr} / local ${local.stderr}`).toEqual([
        c.code,
        c.code,
      ]);
      if (c.kind) expect([remote.doc.kind, local.doc.kind], what).toEqual([c.kind, c.kind]);
      expect(c.view(remote.doc), `${what}: the same document both ways`).toEqual(c.view(local.doc));
    }
    // The same for people: the instance list has its state and age columns either way.
    const table = await run(client.env, ["instances"]);
    expect(table.stdout).toMatch(/INSTANCE\s+NAME\s+NODE\s+STATE\s+RESTARTS\s+AGE/);
    expect(table.stdout).toContain("running");
    const yaml = await run(client.env, ["agents", "-o", "yaml"]);
    expect(yaml.stdout).toMatch(/^agents:\n {2}- name: scout\n/);

    // A token the server does not hold, then no server at all: each said plainly, with its own exit status.
    writeFileSync(client.tokenFile, "x".repeat(43), { mode: 0o600 });
    const refused = await run(client.env, ["agents", "--json"]);
    expect([refused.code, refused.doc.kind]).toEqual([2, "unauthorized"]);
    copyFileSync(join(home, "api.token"), client.tokenFile);
    proc.child.kill("SIGTERM");
    await proc.exited();
    const gone = await run(client.env, ["agents", "--json"]);
    expect([gone.code, gone.doc.kind], gone.stderr).toEqual([1, "unreachable"]);
    expect(String(gone.doc.error)).toContain(url);
    expect(existsSync(join(home, "serve.json")), "serve.json is removed when the server stops").toBe(false);
  }, 300_000);
});

describe("a berth serve running on the home", () => {
  const apiCalls = async (home: string) => {
    const tail = await run({ BERTH_HOME: home }, ["audit", "tail", "-n", "1000", "--json", "--data-dir", home]);
    return (tail.doc.events as JsonObject[])
      .filter((e) => e.kind === "api.call" && (e.payload as JsonObject).phase === "request")
      .map((e) => (e.payload as JsonObject).route);
  };

  it("takes the mutating verbs of a CLI on the same home, stdin specs included, and --local bypasses it", async () => {
    requireBuild();
    const { home, env, spec, node } = await controllerHome();
    const { proc } = await serve(home);
    const record = JSON.parse(readFileSync(join(home, "serve.json"), "utf8")) as { pid: number; url: string };
    expect(record.pid).toBe(proc.child.pid);
    expect((await run(env, ["context", "current", "--json"])).doc).toMatchObject({
      kind: "server",
      server: record.url,
    });
    const before = await apiCalls(home);

    const tier = await run(env, ["nodes", "tier", node.nodeId, "pinned", "--json"]);
    expect(tier.code, tier.stderr).toBe(0);
    const fromStdin = await run(
      env,
      ["deploy", "-f", "-", "--json"],
      readFileSync(spec, "utf8").replace("./pkg", join(home, "pkg")),
    );
    expect([fromStdin.code, fromStdin.doc.outcome], fromStdin.stderr).toEqual([0, "unchanged"]);
    const through = (await apiCalls(home)).slice(before.length);
    expect(through, "both went through the server, chained as its api.call").toEqual(
      expect.arrayContaining([expect.stringMatching(/tier/), expect.stringMatching(/agents/)]),
    );

    const local = await run(env, ["nodes", "tier", node.nodeId, "paired", "--json", "--local"]);
    expect(local.code, local.stderr).toBe(0);
    expect((await apiCalls(home)).length, "--local opened the files: no api.call").toBe(before.length + through.length);
  }, 180_000);
});

describe("TLS trust for a context", () => {
  const hasOpenssl = () => {
    try {
      execFileSync("openssl", ["version"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };

  it("talks to an HTTPS server through its CA file or its pinned certificate, and sends nothing to a certificate it was not told to trust", async (ctx) => {
    if (!hasOpenssl()) ctx.skip();
    requireBuild();
    const home = tempDir("berth-remote-tls-");
    expect((await run({ BERTH_HOME: home }, ["keys", "new"])).code).toBe(0);
    const cert = join(home, "cert.pem");
    const key = join(home, "key.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ed25519",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "1",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
      ],
      { stdio: "ignore" },
    );
    const { proc, url } = await serve(home, ["--tls-cert", cert, "--tls-key", key]);
    expect(url.startsWith("https://")).toBe(true);
    const client = clientHome(home);
    const pin = execFileSync("openssl", ["x509", "-in", cert, "-noout", "-fingerprint", "-sha256"], {
      encoding: "utf8",
    })
      .split("=")[1]
      ?.trim() as string;

    const untrusted = await run(client.env, [
      "context",
      "add",
      "plain",
      "--server",
      url,
      "--token-file",
      client.tokenFile,
      "--json",
    ]);
    expect([untrusted.code, untrusted.doc.kind], untrusted.stderr).toEqual([1, "refused"]);
    const byCa = await run(client.env, [
      "context",
      "add",
      "ca",
      "--server",
      url,
      "--token-file",
      client.tokenFile,
      "--ca-file",
      cert,
      "--json",
    ]);
    expect(byCa.code, byCa.stderr).toBe(0);
    const byPin = await run(client.env, [
      "context",
      "add",
      "pin",
      "--server",
      url,
      "--token-file",
      client.tokenFile,
      "--pin-sha256",
      pin,
      "--use",
      "--json",
    ]);
    expect(byPin.code, byPin.stderr).toBe(0);
    expect((await run(client.env, ["unsettled", "--json"])).doc).toEqual({ settled: null, unsettled: [] });
    expect((await run({ ...client.env, BERTH_CONTEXT: "ca" }, ["unsettled", "--json"])).code).toBe(0);

    const requestsSoFar = () =>
      proc
        .errors()
        .split("\n")
        .filter((l) => l.includes('"url"')).length;
    const seen = requestsSoFar();
    const wrong = await run(client.env, [
      "context",
      "add",
      "wrong",
      "--server",
      url,
      "--token-file",
      client.tokenFile,
      "--pin-sha256",
      "ab".repeat(32),
      "--json",
    ]);
    expect([wrong.code, wrong.doc.kind]).toEqual([1, "refused"]);
    expect(String(wrong.doc.error)).toContain("nothing was sent");
    // BERTH_ADDR with the same pin works without any context; with a wrong one the server logs no request at all.
    const env = {
      BERTH_HOME: client.env.BERTH_HOME,
      BERTH_ADDR: url,
      BERTH_TOKEN_FILE: client.tokenFile,
      BERTH_PIN_SHA256: "cd".repeat(32),
    };
    expect((await run(env, ["unsettled", "--json"])).code).toBe(1);
    await waitFor(() => true, "the server's log to settle", 500);
    expect(requestsSoFar(), "no request reached the server with an unpinned certificate").toBe(seen);
    expect((await run({ ...env, BERTH_PIN_SHA256: pin }, ["unsettled", "--json"])).code).toBe(0);
  }, 180_000);
});
