/**
 * The watch transport against the real kube-apiserver (issue 19, src/kubernetes/watch-stream.ts): watches travel as
 * HTTP/2 streams of one session, so closing one — as every deploy call does — costs no new TLS connection. The
 * HTTP/1.1 fallback is exercised by the conformance suite, whose TLS proxy speaks only HTTP/1.1.
 */
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { WakeSignal, WatchEnd } from "../../src/kubernetes/cluster.js";
import { connectFresh } from "../../src/kubernetes/connect.js";
import type { HttpCluster } from "../../src/kubernetes/http-cluster.js";
import { type ControlPlane, startControlPlane } from "./control-plane.js";

let cp: ControlPlane;
let cluster: HttpCluster;
beforeAll(async () => {
  cp = await startControlPlane();
  // Kubeconfig loading reads KUBECONFIG from the process environment, as a verb does.
  process.env.KUBECONFIG = cp.kubeconfigPath;
  const c = await connectFresh(null);
  if (!c.ok) throw new Error(c.error);
  cluster = c.value;
}, 120_000);
afterAll(async () => {
  cluster?.close();
  await cp?.stop();
});

/** Opens a watch on one pod, runs `act` once it is established, and resolves with the first wake. */
function firstWake(name: string, act: () => Promise<unknown>): Promise<{ wake: WakeSignal; close: () => void }> {
  return new Promise((resolve, reject) => {
    const handle = cluster.watchPod("default", name, undefined, {
      onEstablished: () => void act().catch(reject),
      onWake: (wake) => resolve({ wake, close: () => handle.close() }),
      onEnd: (why: WatchEnd) => reject(new Error(`the watch ended (${why}) before a wake`)),
    });
  });
}

describe("pod watches over HTTP/2 on the real apiserver", () => {
  it("three watches closed one after another share one HTTP/2 session, and each still wakes on its pod", async () => {
    const connects = vi.spyOn(http2, "connect");
    try {
      for (const i of [1, 2, 3]) {
        const name = `h2-watch-${i}`;
        const pod = {
          metadata: { name },
          spec: { containers: [{ name: "agent", image: `example.org/agent@sha256:${"2".repeat(64)}` }] },
        };
        const { wake, close } = await firstWake(name, () =>
          cp.core.createNamespacedPod({ namespace: "default", body: pod }),
        );
        close();
        expect(wake.podName).toBe(name);
        expect(wake.kind).toBe("added");
      }
      expect(connects).toHaveBeenCalledTimes(1);
      const session = connects.mock.results[0]?.value as http2.ClientHttp2Session;
      expect(session.alpnProtocol).toBe("h2");
      expect(session.destroyed).toBe(false);
    } finally {
      connects.mockRestore();
    }
  });
});
