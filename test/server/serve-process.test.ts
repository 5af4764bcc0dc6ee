/**
 * `berth serve` as a process (issues 12 and 13): HTTPS with `--tls-cert/--tls-key` (a throwaway self-signed
 * certificate made by openssl in the test's temp dir), the non-loopback warning that says it needs TLS unless TLS is
 * on, `--allowed-host`, and the diagnostics: one pino JSON line per request on stderr, naming the caller by the
 * token's id and never holding the token, while stdout keeps its lines for people.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAIN, requireBuild } from "../mesh/harness.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { databaseEnv, testDatabaseFor } from "../support/test-database.js";
import { tokenId } from "../../src/server/token.js";

const dirs: string[] = [];
afterEach(() => {
  killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "berth-serve-tls-"));
  dirs.push(dir);
  return dir;
}

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A self-signed Ed25519 certificate for localhost and 127.0.0.1, valid for a day. */
function selfSigned(dir: string): { cert: string; key: string } {
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
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
  return { cert, key };
}

function httpsGet(
  port: number,
  path: string,
  o: { ca: Buffer; token?: string; host?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "GET",
        ca: o.ca,
        servername: "localhost",
        headers: { ...(o.host ? { host: o.host } : {}), ...(o.token ? { authorization: `Bearer ${o.token}` } : {}) },
      },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => {
          body += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("berth serve over TLS", { timeout: 60_000 }, () => {
  it("serves HTTPS with the given certificate, no TLS warning off loopback, the --allowed-host name, one log line per request", async (ctx) => {
    if (!hasOpenssl()) ctx.skip("openssl is not installed: no certificate to test with");
    requireBuild();
    const dir = tempDir();
    const { cert, key } = selfSigned(dir);
    const serve = spawnNode(
      [
        MAIN,
        "serve",
        "--port",
        "0",
        "--data-dir",
        dir,
        "--host",
        "0.0.0.0",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--allowed-host",
        "berth.test",
        "--json",
      ],
      { env: databaseEnv(await testDatabaseFor(dir)) },
    );
    await serve.waitForOutput(/\n/);
    const printed = JSON.parse(serve.output().split("\n")[0] as string) as { url: string; dashboard: string };
    expect(printed.url).toMatch(/^https:\/\/0\.0\.0\.0:\d+$/);
    const port = Number(new URL(printed.url).port);
    expect(serve.errors()).not.toContain("warning");
    const token = readFileSync(join(dir, "api.token"), "utf8").trim();
    const ca = readFileSync(cert);

    expect(await httpsGet(port, "/api/v1/nodes", { ca, token })).toEqual({ status: 200, body: '{"nodes":[]}' });
    expect((await httpsGet(port, "/api/v1/nodes", { ca })).status).toBe(401);
    expect((await httpsGet(port, "/api/v1/nodes", { ca, token, host: `berth.test:${port}` })).status).toBe(200);
    expect((await httpsGet(port, "/api/v1/nodes", { ca, token, host: `other.test:${port}` })).status).toBe(421);
    expect((await httpsGet(port, "/healthz", { ca })).status).toBe(200);
    // Plain HTTP to the TLS port gets no API answer.
    const plain = await fetch(`http://127.0.0.1:${port}/api/v1/health`).then(
      (r) => r.status,
      () => "refused",
    );
    expect(plain).not.toBe(200);

    serve.child.kill("SIGTERM");
    expect(await serve.exited()).toEqual({ code: 0, signal: null });
    const lines = serve
      .errors()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => typeof l.status === "number");
    expect(requests.map((l) => [l.method, l.route, l.status, l.caller])).toEqual([
      ["GET", "/api/v1/nodes", 200, tokenId(token)],
      ["GET", "/api/v1/nodes", 401, null],
      ["GET", "/api/v1/nodes", 200, tokenId(token)],
      ["GET", "/api/v1/nodes", 421, null],
      ["GET", "/healthz", 200, null],
      ...requests.slice(5).map((l) => [l.method, l.route, l.status, l.caller]),
    ]);
    for (const l of requests) expect(typeof l.ms).toBe("number");
    expect(serve.errors()).not.toContain(token);
    expect(serve.errors()).not.toContain('{"nodes"');
  });

  it("off loopback without TLS it warns that it needs TLS; --tls-cert without --tls-key is refused naming the flag", async () => {
    requireBuild();
    const dir = tempDir();
    const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", dir, "--host", "0.0.0.0"], {
      env: databaseEnv(await testDatabaseFor(dir)),
    });
    await serve.waitForOutput("dashboard: ");
    expect(serve.errors()).toMatch(
      /not loopback, without TLS.*This needs TLS: start it with --tls-cert FILE --tls-key FILE/,
    );
    expect(serve.output()).toMatch(
      /^berth serve: API at http:\/\/0\.0\.0\.0:\d+\/api\/v1 \(data dir .*\)\ndashboard: http:\/\/0\.0\.0\.0:\d+\/#token=/,
    );
    serve.child.kill("SIGTERM");
    await serve.exited();

    const half = await runNode([MAIN, "serve", "--port", "0", "--data-dir", dir, "--tls-cert", join(dir, "cert.pem")]);
    expect(half.code).toBe(2);
    expect(half.stderr).toContain("--tls-key");
  });
});
