/**
 * The HTTP adapter against a scripted local apiserver: request shapes (quorum reads carry no resourceVersion,
 * deletes carry preconditions only), verdict mapping (the two 409s never conflated, transport errors and empty reasons
 * match nothing), the LIST `Date` header, Secret data never surfacing, and the watch yielding wake signals only.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromQuorumRead } from "../core/kubernetes/quorum.js";
import { rawPod, WHO } from "../../test/support/kubernetes/pods.js";
import { verifyPod } from "../core/kubernetes/verify.js";
import type { WakeSignal, WatchEnd } from "./cluster.js";
import { fencedDeleteBody, HttpCluster } from "./http-cluster.js";

interface Seen {
  method: string;
  url: string;
  body: string;
  auth: string | undefined;
}
type Reply = (req: Seen, res: http.ServerResponse) => void;

const seen: Seen[] = [];
let reply: Reply = (_r, res) => res.end();
let server: http.Server;
let cluster: HttpCluster;

const status = (res: http.ServerResponse, code: number, reason: string, message = "m") => {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason, code, message }));
};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const s = { method: req.method ?? "", url: req.url ?? "", body, auth: req.headers.authorization };
      seen.push(s);
      reply(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "test-token" }],
    contexts: [{ name: "ctx", cluster: "c", user: "u" }],
    currentContext: "ctx",
  });
  cluster = new HttpCluster(kc, {}, { context: "ctx", server: `127.0.0.1:${port}` });
});

afterAll(() => {
  cluster.close();
  server.close();
});

describe("HttpCluster (spec/kubernetes.md §8.6, §11, §19.2 cluster adapter)", () => {
  it("quorum reads and lists carry no resourceVersion; credentials come from the kubeconfig", async () => {
    seen.length = 0;
    reply = (_r, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ items: [] }));
    };
    await cluster.getPod("ns", "p");
    await cluster.listPods("ns", "a=b,c=d");
    await cluster.listSecrets("ns", "a=b");
    expect(seen.map((s) => s.url)).toEqual([
      "/api/v1/namespaces/ns/pods/p",
      "/api/v1/namespaces/ns/pods?labelSelector=a%3Db%2Cc%3Dd",
      "/api/v1/namespaces/ns/secrets?labelSelector=a%3Db",
    ]);
    for (const s of seen) expect(s.url).not.toContain("resourceVersion");
    expect(seen[0]?.auth).toBe("Bearer test-token");
    expect(cluster.requestCount).toBeGreaterThanOrEqual(3);
  });

  it("reads the LIST Date header strictly, and no header means no server clock", async () => {
    reply = (_r, res) => {
      res.writeHead(200, { "content-type": "application/json", date: "Sun, 02 Aug 2026 04:00:00 GMT" });
      res.end(JSON.stringify({ items: [rawPod()] }));
    };
    const listed = await cluster.listPods("ns", "x=y");
    expect(listed.kind === "listed" && listed.serverDateMs).toBe(Date.parse("2026-08-02T04:00:00Z"));
    reply = (_r, res) => {
      res.removeHeader("date");
      res.sendDate = false;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ items: [] }));
    };
    const none = await cluster.listPods("ns", "x=y");
    expect(none.kind === "listed" && none.serverDateMs).toBeNull();
  });

  it("a quorum GET yields a pod the verifier accepts", async () => {
    reply = (_r, res) => {
      res.writeHead(200);
      res.end(JSON.stringify(rawPod({ uid: "u1", resourceVersion: "9" })));
    };
    const r = await cluster.getPod("ns", WHO.podName);
    if (r.kind !== "found") throw new Error(r.kind);
    const v = verifyPod(r.object, WHO, { kind: "recoverable" });
    expect(v.kind === "verified" && v.pod.fence).toEqual({ uid: "u1", resourceVersion: "9" });
  });

  it("sends a fenced delete with preconditions only and maps each verdict", async () => {
    const observed = verifyPod(fromQuorumRead(rawPod({ uid: "u1", resourceVersion: "7" })), WHO, {
      kind: "terminated",
    });
    if (observed.kind !== "verified") throw new Error("fixture pod failed verification");
    const fence = observed.pod.fence;
    const cases: Array<[Reply, string]> = [
      [(_r, res) => res.writeHead(200).end("{}"), "accepted"],
      [(_r, res) => status(res, 404, "NotFound"), "not-found"],
      [(_r, res) => status(res, 409, "Conflict"), "precondition-failed"],
      [(_r, res) => status(res, 409, "AlreadyExists"), "error"],
      [(_r, res) => res.writeHead(404).end("<html>gateway</html>"), "error"],
      [(_r, res) => res.writeHead(404).end(JSON.stringify({ kind: "Status", reason: "", code: 404 })), "error"],
      [(_r, res) => res.socket?.destroy(), "error"],
    ];
    for (const [r, expected] of cases) {
      seen.length = 0;
      reply = r;
      const out = await cluster.deletePod("ns", "p", fence, { kind: "gc-terminated" });
      expect(out.kind).toBe(expected);
      expect(seen[0]?.method).toBe("DELETE");
      expect(JSON.parse(seen[0]?.body ?? "{}")).toEqual(
        JSON.parse(fencedDeleteBody({ uid: "u1", resourceVersion: "7" })),
      );
      expect(seen[0]?.body).not.toMatch(/gracePeriodSeconds|propagationPolicy/);
    }
  });

  it("a reset connection on a read is an error, never absence", async () => {
    reply = (_r, res) => res.socket?.destroy();
    expect((await cluster.getPod("ns", "p")).kind).toBe("error");
    reply = (_r, res) => status(res, 404, "NotFound");
    expect((await cluster.getPod("ns", "p")).kind).toBe("absent");
  });

  it("keeps the two 409s apart on create", async () => {
    reply = (_r, res) => status(res, 409, "AlreadyExists");
    expect((await cluster.createPod("ns", { metadata: { name: "p" } })).kind).toBe("already-exists");
    reply = (_r, res) => status(res, 409, "Conflict");
    expect((await cluster.createPod("ns", { metadata: { name: "p" } })).kind).toBe("error");
    reply = (_r, res) => status(res, 403, "Forbidden", "namespaces is forbidden");
    const denied = await cluster.createNamespace({ metadata: { name: "x" } });
    expect(denied.kind === "error" && denied.error).toMatchObject({ kind: "status", code: 403, reason: "Forbidden" });
  });

  it("never surfaces Secret data from a create or read", async () => {
    reply = (_r, res) => {
      res.writeHead(201);
      res.end(
        JSON.stringify({
          metadata: { name: "s", uid: "u", resourceVersion: "1" },
          data: { BUZZ_PRIVATE_KEY: "bnNlYzE=" },
          stringData: { X: "nsec1" },
        }),
      );
    };
    const r = await cluster.createSecret("ns", { metadata: { name: "s" } });
    expect(JSON.stringify(r)).not.toMatch(/bnNlYzE|nsec1|"data"|stringData/);
  });

  it("a watch yields wake signals only and reports 410 as gone and 403 as forbidden", async () => {
    reply = (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ type: "MODIFIED", object: rawPod() })}\n`);
      res.write(`${JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "5" } } })}\n`);
      res.end(`${JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } })}\n`);
      expect(req.url).toContain("watch=true");
      expect(req.url).toContain("fieldSelector=metadata.name%3Dp");
      expect(req.url).toContain("resourceVersion=4");
      expect(req.url).toContain("timeoutSeconds=60");
    };
    const wakes: WakeSignal[] = [];
    const ended = await new Promise<WatchEnd>((resolve) => {
      cluster.watchPod("ns", "p", "4", { onEstablished: () => {}, onWake: (s) => wakes.push(s), onEnd: resolve });
    });
    // The pod's name and the event's resourceVersion, never the object.
    expect(wakes).toEqual([{ podName: "p", kind: "modified", resourceVersion: expect.any(String) }]);
    expect(Object.keys(wakes[0] ?? {}).sort()).toEqual(["kind", "podName", "resourceVersion"]);
    expect(ended).toBe("gone");
    reply = (_r, res) => status(res, 403, "Forbidden");
    const forbidden = await new Promise<WatchEnd>((resolve) => {
      cluster.watchPod("ns", "p", undefined, { onEstablished: () => {}, onWake: () => {}, onEnd: resolve });
    });
    expect(forbidden).toBe("forbidden");
  });

  it("a watch of a pod set selects by label, names each pod from its event, moves on bookmarks and maps an HTTP 410 to gone", async () => {
    reply = (req, res) => {
      expect(req.url).toContain("watch=true");
      expect(req.url).toContain(
        `labelSelector=${encodeURIComponent("app.kubernetes.io/managed-by=buzz-backend-kubernetes")}`,
      );
      expect(req.url).not.toContain("fieldSelector");
      expect(req.url).toContain("resourceVersion=7");
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a", resourceVersion: "8" } } })}\n`);
      res.write(`${JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "9" } } })}\n`);
      res.end(`${JSON.stringify({ type: "DELETED", object: { metadata: { name: "b", resourceVersion: "10" } } })}\n`);
    };
    const wakes: WakeSignal[] = [];
    const bookmarks: string[] = [];
    const ended = await new Promise<WatchEnd>((resolve) => {
      cluster.watchPods("ns", "app.kubernetes.io/managed-by=buzz-backend-kubernetes", "7", {
        onEstablished: () => {},
        onWake: (s) => wakes.push(s),
        onBookmark: (rv) => bookmarks.push(rv),
        onEnd: resolve,
      });
    });
    expect(wakes).toEqual([
      { podName: "a", kind: "added", resourceVersion: "8" },
      { podName: "b", kind: "deleted", resourceVersion: "10" },
    ]);
    expect([bookmarks, ended]).toEqual([["9"], "closed"]);
    reply = (_r, res) => status(res, 410, "Expired");
    const gone = await new Promise<WatchEnd>((resolve) => {
      cluster.watchPods("ns", "x=y", "1", { onEstablished: () => {}, onWake: () => {}, onEnd: resolve });
    });
    expect(gone).toBe("gone");
  });
});
