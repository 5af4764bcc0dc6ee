/**
 * Buzz's richest recorded request (`deploy-full-launch`, test/k8s-provider/buzz-wire-fixtures.ts) through the
 * `buzz-backend-berth` bin against a real kubelet (issue 34): the pod really runs, the repeat is the no-op, and
 * `berth k8s stop --wait` takes the harness process, the pod and its Secret away. Only the namespace, the image and
 * the requests differ from the recording (the node has no registry and 2 CPUs).
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  auditOf,
  freshNamespace,
  podsIn,
  removeTempDirs,
  runBerth,
  secretsIn,
  startProvider,
  tempHome,
} from "../k8s/conformance/support.js";
import { FULL_LAUNCH } from "../k8s-provider/buzz-wire-fixtures.js";
import { killAll } from "../support/process.js";
import { alive, containerPid } from "./stack.js";
import { agentStatus, core, dropNamespace, node, skipReason } from "./support.js";

// The fixture's nsec (nsec1vl02…): its x-only public key, and so the pod name Buzz gives it.
const PUBKEY = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e";
const POD = `buzz-agent-${PUBKEY.slice(0, 12)}`;

const namespaces: string[] = [];
afterEach(() => killAll());
afterAll(async () => {
  for (const ns of namespaces) await dropNamespace(ns);
  removeTempDirs();
});

async function buzzBackend(request: unknown, kubeconfig: string, home: string) {
  const previous = process.env.BERTH_CONFORMANCE_ENTRY;
  process.env.BERTH_CONFORMANCE_ENTRY = "buzz-backend";
  try {
    return await startProvider(request, { kubeconfig, home }).answer();
  } finally {
    if (previous === undefined) delete process.env.BERTH_CONFORMANCE_ENTRY;
    else process.env.BERTH_CONFORMANCE_ENTRY = previous;
  }
}

describe.skipIf(skipReason !== null)("Buzz's full-launch request on a real kubelet", () => {
  it("buzz-backend-berth answers ok with the agent id once a real container runs, answers the repeat with the no-op, and berth k8s stop --wait removes process, pod and Secret", async () => {
    const ns = freshNamespace("real-buzz");
    namespaces.push(ns);
    const home = tempHome("real-buzz");
    const request = {
      ...FULL_LAUNCH,
      provider_config: {
        ...FULL_LAUNCH.provider_config,
        namespace: ns,
        image: node.images.agent,
        cpu_request: "10m",
        memory_request: "32Mi",
      },
    };
    const first = await buzzBackend(request, node.kubeconfig, home);
    expect(first.answer).toEqual({ ok: true, agent_id: POD });
    const pod = await core().readNamespacedPod({ namespace: ns, name: POD });
    const pid = containerPid(agentStatus(pod)?.containerID ?? "") as number;
    expect(alive(pid)).toBe(true);
    // The harness got the launch's environment from the Secret (read from /proc, never printed).
    const environ = (await import("node:fs")).readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    expect(environ).toContain("GOOSE_MODEL=gpt-5");
    expect(environ).toContain("USER_KEY=user-value");

    const again = await buzzBackend(request, node.kubeconfig, home);
    expect(again.answer).toEqual({ ok: true, agent_id: POD });
    expect(auditOf(home, "k8s.deploy.outcome").at(-1)).toMatchObject({
      ok: true,
      created_this_call: false,
      last_action: "no-op",
      api_requests: 1,
    });

    const stop = await runBerth(["k8s", "stop", "--pubkey", PUBKEY, "--namespace", ns, "--wait", "--json"], {
      kubeconfig: node.kubeconfig,
      home,
    });
    expect(stop.code, stop.stderr).toBe(0);
    expect(alive(pid)).toBe(false);
    expect(await podsIn(core(), ns)).toHaveLength(0);
    expect(await secretsIn(core(), ns)).toHaveLength(0);
  });
});
