/**
 * Issue 13, `berth k8s …` through a context, against the real apiserver: `berth serve` runs on a controller home whose
 * KUBECONFIG names the test cluster; the client has no kubeconfig at all, only a context. deploy, status, list and
 * stop --wait go through the server and answer as the same verbs on the controller host's kubeconfig (--local); the
 * pod is judged in the cluster and the server's k8s chain holds the deploy.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject } from "../../../src/core/crypto/canonical.js";
import { tempDir } from "../../mesh/harness.js";
import { killAll } from "../../support/process.js";
import { clientHome, run, serve } from "../../cli/remote-support.js";
import { type ControlPlane, startControlPlane } from "../control-plane.js";
import {
  DEADLINE_SECONDS,
  deployRequest,
  freshNamespace,
  IMAGE,
  NamespaceStates,
  newAgent,
  readPod,
  removeTempDirs,
  secretsIn,
  until,
} from "./support.js";

let cp: ControlPlane;
let states: NamespaceStates;
beforeAll(async () => {
  cp = await startControlPlane();
  states = new NamespaceStates(cp);
}, 120_000);
afterAll(async () => {
  killAll();
  await cp?.stop();
  removeTempDirs();
});

describe("berth k8s through a context", () => {
  it("deploys, reads and stops on the server's cluster, the same documents as on the controller host's kubeconfig", async () => {
    const home = tempDir("berth-remote-k8s-home-");
    const scout = newAgent();
    // SCOUT_NSEC: the agent spec's nsec_env, read by the server that deploys it (never sent over the API).
    const serverEnv = {
      BERTH_HOME: home,
      KUBECONFIG: cp.kubeconfigPath,
      BERTH_K8S_DEADLINE_SECONDS: String(DEADLINE_SECONDS),
      SCOUT_NSEC: scout.nsec,
    };
    expect((await run(serverEnv, ["keys", "new"])).code).toBe(0);
    const { url: server } = await serve(home, [], serverEnv);
    const client = clientHome(home);
    const clientEnv = { ...client.env, KUBECONFIG: join(String(client.env.BERTH_HOME), "no-kubeconfig") };
    expect(
      (await run(clientEnv, ["context", "add", "lab", "--server", server, "--token-file", client.tokenFile, "--use"]))
        .code,
    ).toBe(0);

    const ns = freshNamespace("remote");
    states.set(ns, { kind: "running" });
    const agent = newAgent();
    const request = deployRequest(agent, ns);
    const file = join(home, "agent.json");
    writeFileSync(
      file,
      JSON.stringify({
        agent: { ...(request.agent as JsonObject), launch: { command: "goose", owner_pubkey: "a".repeat(64) } },
        provider_config: request.provider_config,
      }),
    );

    const deployed = await run(clientEnv, ["k8s", "deploy", file, "--json"]);
    expect([deployed.code, deployed.doc], deployed.stderr).toEqual([0, { ok: true, agent_id: agent.podName }]);
    expect(
      (await readPod(cp.core, ns, agent.podName))?.status?.containerStatuses?.[0]?.state?.running,
      "the pod runs in the server's cluster",
    ).toBeDefined();

    for (const args of [
      ["k8s", "list", "--namespace", ns],
      ["k8s", "status", "--pubkey", agent.pubkey, "--namespace", ns],
    ]) {
      const remote = await run(clientEnv, [...args, "--json"]);
      const local = await run(serverEnv, [...args, "--json", "--local"]);
      const what = `berth ${args.join(" ")}: ${remote.stderr} / ${local.stderr}`;
      expect([remote.code, local.code], what).toEqual([0, 0]);
      // The age is read a few seconds apart: everything else is the same.
      const still = (d: JsonObject) => ({ ...d, age_seconds: typeof d.age_seconds === "number" ? "n" : d.age_seconds });
      expect(still(remote.doc), `${what}: the same document both ways`).toEqual(still(local.doc));
    }
    // Issue 36: k8s list -l selects on the pods' own labels (the binding's), evaluated by the apiserver, both ways.
    for (const [selector, expected] of [
      ["buzz.block.xyz/binding-version=1", [agent.podName]],
      ["buzz.block.xyz/binding-version!=1", []],
      ["!buzz.block.xyz/agent-pubkey", []],
    ] as const) {
      const args = ["k8s", "list", "--namespace", ns, "-l", selector, "--json"];
      const [remote, local] = await Promise.all([run(clientEnv, args), run(serverEnv, [...args, "--local"])]);
      expect([remote.code, local.code], `${selector}: ${remote.stderr} / ${local.stderr}`).toEqual([0, 0]);
      const names = (d: JsonObject) => (d as unknown as Array<{ name: string }>).map((r) => r.name);
      expect(names(remote.doc), selector).toEqual([...expected]);
      expect(names(local.doc), selector).toEqual([...expected]);
    }
    const badSelector = ["k8s", "list", "--namespace", ns, "-l", "a b"];
    const [badRemote, badLocal] = await Promise.all([
      run(clientEnv, badSelector),
      run(serverEnv, [...badSelector, "--local"]),
    ]);
    expect([badRemote.code, badRemote.stderr]).toEqual([2, badLocal.stderr]);
    // Issue 36 item 9: k8s status for people is describe lines made from that document, the same both ways.
    const statusArgs = ["k8s", "status", "--pubkey", agent.pubkey, "--namespace", ns];
    const [remoteText, localText] = await Promise.all([
      run(clientEnv, statusArgs),
      run(serverEnv, [...statusArgs, "--local"]),
    ]);
    const stillText = (t: string) => t.replace(/^Age seconds: +\d+$/m, "Age seconds: n");
    expect(stillText(remoteText.stdout), "k8s status: the same text both ways").toBe(stillText(localText.stdout));
    expect(remoteText.stdout).toMatch(/^Observed: +verified$/m);
    expect(remoteText.stdout, "no JSON and no [object Object] in the text").not.toMatch(/[{}"]|object Object/);

    const stopped = await run(clientEnv, [
      "k8s",
      "stop",
      "--pubkey",
      agent.pubkey,
      "--namespace",
      ns,
      "--wait",
      "--json",
    ]);
    expect([stopped.code, stopped.doc.ok], stopped.stderr).toEqual([0, true]);
    await until("the pod gone", async () =>
      (await readPod(cp.core, ns, agent.podName)) === undefined ? true : undefined,
    );

    // A Kubernetes agent deployed through the context, then `agent stop --wait`: the server answers only once the
    // pod is gone and its Secret removed (issue 13: --wait was honoured on the local files only).
    const ns2 = freshNamespace("remote-agent");
    states.set(ns2, { kind: "running" });
    const spec = join(home, "scout.yaml");
    writeFileSync(
      spec,
      `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: kubernetes\n  image: ${IMAGE}\n  kubernetes: { relay_url: "wss://relay.example", nsec_env: SCOUT_NSEC, command: goose, owner_pubkey: ${"a".repeat(64)}, provider_config: { namespace: ${ns2} } }\n`,
    );
    const agentDeployed = await run(clientEnv, ["deploy", spec, "--json"]);
    expect([agentDeployed.code, agentDeployed.doc.ok], agentDeployed.stderr || agentDeployed.stdout).toEqual([0, true]);
    expect(
      (await readPod(cp.core, ns2, scout.podName))?.status?.containerStatuses?.[0]?.state?.running,
      "scout runs in the server's cluster",
    ).toBeDefined();
    expect((await secretsIn(cp.core, ns2)).length, "its Secret exists").toBeGreaterThan(0);
    // A kubelet that takes 3 s to finish the deletion: an answer that did not wait would come while the pod still exists.
    cp.kubelet.gracefulDeletionMs = 3_000;
    const agentStopped = await run(clientEnv, ["agent", "stop", "scout", "--wait", "--json"]);
    cp.kubelet.gracefulDeletionMs = 200;
    expect([agentStopped.code, agentStopped.doc.ok], agentStopped.stderr).toEqual([0, true]);
    expect(await readPod(cp.core, ns2, scout.podName), "the pod is gone when stop --wait answers").toBeUndefined();
    expect(
      (await secretsIn(cp.core, ns2)).map((x) => x.metadata?.name),
      "and its Secret too",
    ).toEqual([]);

    // The server recorded both in its own home's k8s chain, which the client reads through it.
    const chain = await run(clientEnv, ["audit", "tail", "--chain", "k8s", "-n", "200", "--json"]);
    const kinds = (chain.doc.events as JsonObject[]).map((e) => String(e.kind));
    expect(kinds, chain.stderr).toEqual(expect.arrayContaining(["k8s.deploy.outcome"]));
    expect(
      kinds.some((k) => k.startsWith("k8s.stop")),
      kinds.join(","),
    ).toBe(true);
  }, 240_000);
});
