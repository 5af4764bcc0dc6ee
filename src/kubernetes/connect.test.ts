/**
 * One connection per cluster for a process's lifetime (issue 19, spec/kubernetes.md §20 P-23): `connect()` hands out
 * leases on one pooled `HttpCluster` per kubeconfig and context, against a scripted local apiserver.
 */
import { mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePooledClusters, pooled } from "./cluster-pool.js";
import { connect, poolKey } from "./connect.js";

let server: http.Server;
const seen: string[] = [];
const sockets = new Set<unknown>();
const dir = mkdtempSync(join(tmpdir(), "berth-pool-"));
const kubeconfig = join(dir, "config");

function writeKubeconfig(port: number, token: string): void {
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: ${token} } }]
contexts: [{ name: ctx, context: { cluster: c, user: u } }]
current-context: ctx
`,
  );
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    sockets.add(req.socket);
    seen.push(`${req.method} ${req.url}`);
    if (req.url?.startsWith("/api/v1/namespaces/ns") && !req.url.includes("/pods")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ metadata: { name: "ns" } }));
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        reason: "NotFound",
        code: 404,
        message: "not found",
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  writeKubeconfig((server.address() as AddressInfo).port, "t1");
  // The client library reads $KUBECONFIG from the process environment.
  savedKubeconfig = process.env.KUBECONFIG;
  process.env.KUBECONFIG = kubeconfig;
});

let savedKubeconfig: string | undefined;
afterAll(() => {
  if (savedKubeconfig === undefined) delete process.env.KUBECONFIG;
  else process.env.KUBECONFIG = savedKubeconfig;
  closePooledClusters();
  server.close();
});

const env = () => ({ KUBECONFIG: kubeconfig, PATH: process.env.PATH });

describe("the pooled Kubernetes connection (issue 19)", () => {
  it("two connects share one connection and one socket; each lease counts only its own requests", async () => {
    const [a, b] = await Promise.all([connect(null, env()), connect(null, env())]);
    if (!a.ok || !b.ok) throw new Error(`connect failed: ${!a.ok ? a.error : ""} ${!b.ok ? b.error : ""}`);
    expect(pooled(poolKey(null, env()))).toBeDefined();
    await a.value.getPod("ns", "p");
    await a.value.getPod("ns", "q");
    await b.value.getPod("ns", "r");
    expect([a.value.requestCount, b.value.requestCount]).toEqual([2, 1]);
    expect(sockets.size, "one keep-alive socket for sequential requests of both leases").toBe(1);
    a.value.close();
    await b.value.getPod("ns", "s");
    expect(sockets.size, "closing a lease leaves the shared connection open").toBe(1);
  });

  it("a namespace seen within the trust window costs no second request", async () => {
    const c = await connect(null, env());
    if (!c.ok) throw new Error("connect failed");
    const before = seen.length;
    expect((await c.value.getNamespace("ns")).kind).toBe("found");
    expect((await c.value.getNamespace("ns")).kind).toBe("found");
    expect(seen.length - before).toBeLessThanOrEqual(1);
    expect(c.value.requestCount).toBe(seen.length - before);
  });

  it("a rewritten kubeconfig gets a new connection at the next connect", async () => {
    const first = pooled(poolKey(null, env()));
    writeKubeconfig((server.address() as AddressInfo).port, "t2");
    utimesSync(kubeconfig, new Date(), new Date(Date.now() + 5_000));
    const c = await connect(null, env());
    if (!c.ok) throw new Error("connect failed");
    expect(pooled(poolKey(null, env()))).not.toBe(first);
  });
});
