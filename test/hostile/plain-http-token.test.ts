/**
 * Issue 33 item 14: no API token over plain HTTP to another host. The "other host" is this machine's own non-loopback
 * address, where the test listens and records every request it gets (and its Authorization header): the judge is
 * what reached the wire, and the CLI's own answers.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { mkdtempSync, writeFileSync, existsSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { MAIN, requireBuild } from "../mesh/harness.js";
import { killAll, runNode } from "../support/process.js";

const TOKEN = "plain-http-test-token-0123456789abcdef";
beforeAll(requireBuild);
afterEach(() => killAll());

let server: Server | undefined;
afterEach(() => server?.close());

/** A stand-in berth serve on this machine's first non-loopback IPv4 address, recording what it is sent. */
async function remoteListener(): Promise<{ url: string; seen: Array<{ path: string; auth: string | undefined }> }> {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === "IPv4" && !a.internal)?.address;
  if (!address)
    throw new Error("this machine has no non-loopback IPv4 address for the test to stand in for another host");
  const seen: Array<{ path: string; auth: string | undefined }> = [];
  server = createServer((req: IncomingMessage, res) => {
    seen.push({ path: req.url ?? "", auth: req.headers.authorization });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      req.url?.endsWith("/agents") ? JSON.stringify({ agents: [] }) : JSON.stringify({ ok: true, version: "test" }),
    );
  });
  await new Promise<void>((r) => server?.listen(0, address, r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://${address}:${port}`, seen };
}

function setup() {
  const dir = mkdtempSync(join(tmpdir(), "berth-plainhttp-"));
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  const env = { BERTH_HOME: join(dir, "home"), BERTH_CONTEXTS: join(dir, "contexts.json") };
  return { dir, tokenFile, env };
}

describe("the API token and plain HTTP", { timeout: 60_000 }, () => {
  it("context add --server http://<another host> is refused, names --insecure-http, sends nothing and saves nothing", async () => {
    const remote = await remoteListener();
    const { tokenFile, env } = setup();
    const r = await runNode([MAIN, "context", "add", "prod", "--server", remote.url, "--token-file", tokenFile], {
      env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--insecure-http");
    expect(r.stderr).not.toContain(TOKEN);
    expect(remote.seen).toEqual([]);
    expect(existsSync(env.BERTH_CONTEXTS)).toBe(false);
  });

  it("with --insecure-http it is saved, and every use warns on stderr", async () => {
    const remote = await remoteListener();
    const { tokenFile, env } = setup();
    const added = await runNode(
      [MAIN, "context", "add", "prod", "--server", remote.url, "--token-file", tokenFile, "--insecure-http", "--use"],
      { env },
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toMatch(/warning: context prod sends the API token over plain HTTP/);
    for (let i = 0; i < 2; i++) {
      const used = await runNode([MAIN, "agents", "--json"], { env });
      expect(used.stderr).toMatch(/warning: context prod sends the API token over plain HTTP/);
      expect(used.stdout).not.toContain("warning");
    }
    expect(remote.seen.some((s) => s.path.endsWith("/agents") && s.auth === `Bearer ${TOKEN}`)).toBe(true);
  });

  it("BERTH_ADDR=http://<another host> is refused before any request unless BERTH_INSECURE_HTTP=1, which warns", async () => {
    const remote = await remoteListener();
    const { env } = setup();
    const refused = await runNode([MAIN, "agents", "--json"], {
      env: { ...env, BERTH_ADDR: remote.url, BERTH_TOKEN: TOKEN },
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("BERTH_INSECURE_HTTP=1");
    expect(remote.seen).toEqual([]);
    const accepted = await runNode([MAIN, "agents", "--json"], {
      env: { ...env, BERTH_ADDR: remote.url, BERTH_TOKEN: TOKEN, BERTH_INSECURE_HTTP: "1" },
    });
    expect(accepted.stderr).toMatch(/warning: BERTH_ADDR sends the API token over plain HTTP/);
    expect(remote.seen.length).toBeGreaterThan(0);
  });

  it("loopback over plain HTTP stays allowed without a warning (it never leaves the machine)", async () => {
    const { tokenFile, env } = setup();
    const r = await runNode(
      [MAIN, "context", "add", "here", "--server", "http://127.0.0.1:9", "--token-file", tokenFile, "--no-check"],
      { env },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain("warning");
  });
});
