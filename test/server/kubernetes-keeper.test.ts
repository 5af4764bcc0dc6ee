/**
 * Issue 16, the Kubernetes half of the keep loop: `berth serve` as a real process keeps the registry's
 * Kubernetes agents running per their spec's `restart`, against a real kube-apiserver + etcd with the simulated
 * kubelet (test/k8s/control-plane.ts). Everything is checked from outside: the pods through the apiserver, the
 * chain read-only and with `berth audit verify`, the server's own log lines.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../k8s/control-plane.js";
import { auditOf, IMAGE, newAgent, readPod, type TestAgent, until } from "../k8s/conformance/support.js";
import { builtPath } from "../support/built.js";
import { killAll, runNode, spawnNode } from "../support/process.js";

const NS = "berth-keeper";
const MAIN = builtPath("src/cli/entry/main.js");

let cp: ControlPlane;
const home = mkdtempSync(join(tmpdir(), "berth-keeper-"));

const agents: Record<"alpha" | "beta" | "gamma", TestAgent & { restart: string }> = {
  alpha: { ...newAgent(), restart: "on-failure" },
  beta: { ...newAgent(), restart: "never" },
  gamma: { ...newAgent(), restart: "always" },
};

function writeSpec(name: keyof typeof agents): string {
  const a = agents[name];
  writeFileSync(join(home, `${name}.nsec`), `${a.nsec}\n`, { mode: 0o600 });
  const path = join(home, `${name}.yaml`);
  writeFileSync(
    path,
    `apiVersion: berth/v1
kind: Agent
metadata: { name: ${name} }
spec:
  target: kubernetes
  image: ${IMAGE}
  restart: ${a.restart}
  kubernetes: { relay_url: "wss://relay.example", nsec_file: ${name}.nsec, command: goose, owner_pubkey: ${"a".repeat(64)}, provider_config: { namespace: ${NS} } }
`,
  );
  return path;
}

const env = () => ({ KUBECONFIG: cp.kubeconfigPath, BERTH_HOME: home, HOME: home, BERTH_K8S_DEADLINE_SECONDS: "30" });

async function uidOf(name: keyof typeof agents): Promise<string | undefined> {
  return (await readPod(cp.core, NS, agents[name].podName))?.metadata?.uid;
}

async function runningUid(name: keyof typeof agents): Promise<string | undefined> {
  const pod = await readPod(cp.core, NS, agents[name].podName);
  const running = pod?.status?.containerStatuses?.find((c) => c.name === "agent")?.state?.running;
  return running && !pod?.metadata?.deletionTimestamp ? pod?.metadata?.uid : undefined;
}

const creates = (a: TestAgent) => auditOf(home, "k8s.pod.create", "intent").filter((r) => r.object === a.podName);
const deletes = (a: TestAgent) => auditOf(home, "k8s.pod.delete", "intent").filter((r) => r.object === a.podName);

function loopDeploys(): Array<Record<string, unknown>> {
  const db = new Database(join(home, "k8s.db"), { readonly: true });
  try {
    return (
      db.prepare("SELECT payload FROM audit_event WHERE kind = 'agent.deploy' ORDER BY seq").all() as Array<{
        payload: string;
      }>
    )
      .map((r) => JSON.parse(r.payload) as Record<string, unknown>)
      .filter((p) => (p.by as { actor?: string } | undefined)?.actor === "reconcile-loop");
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  cp = await startControlPlane();
  cp.kubelet.defaultState = () => ({ kind: "running" });
}, 120_000);
afterAll(async () => {
  killAll();
  await cp?.stop();
});

describe("berth serve keeps Kubernetes agents running per their restart policy (real kube-apiserver)", {
  timeout: 180_000,
}, () => {
  it("replaces a failed on-failure pod once, leaves a never pod and a running pod alone, and relists after its watch is too old", async () => {
    for (const name of ["alpha", "beta", "gamma"] as const) {
      const r = await runNode([MAIN, "deploy", writeSpec(name), "--json"], { cwd: home, env: env() });
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
    const first = {
      alpha: await runningUid("alpha"),
      beta: await runningUid("beta"),
      gamma: await runningUid("gamma"),
    };
    expect(
      Object.values(first).every((u) => u !== undefined),
      JSON.stringify(first),
    ).toBe(true);

    const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", home, "--json"], { cwd: home, env: env() });
    await serve.waitForOutput(/\n/);

    // alpha exits 3 under on-failure, beta exits 1 under never; gamma keeps running.
    await cp.kubelet.setState(NS, agents.alpha.podName, { kind: "terminated", exitCode: 3 });
    await cp.kubelet.setState(NS, agents.beta.podName, { kind: "terminated", exitCode: 1 });
    const replaced = await until(
      "alpha replaced by a new running pod",
      async () => {
        const uid = await runningUid("alpha");
        return uid !== undefined && uid !== first.alpha ? uid : undefined;
      },
      60_000,
    );
    // Absence of a second action can only be seen over time: past more than one full pass (the tick is 10 s).
    await new Promise((r) => setTimeout(r, 12_000));
    expect(await runningUid("alpha"), "replaced once, and the new pod is left alone").toBe(replaced);
    expect(creates(agents.alpha), "one create by the deploy, one by the loop").toHaveLength(2);
    expect(creates(agents.alpha).map((r) => r.mode)).toEqual(["cli", "reconcile-loop"]);
    const alphaDeletes = deletes(agents.alpha);
    expect(alphaDeletes, "one fenced delete, carrying the terminated pod's uid").toHaveLength(1);
    expect(alphaDeletes[0]).toMatchObject({
      mode: "reconcile-loop",
      fence: { kind: "precondition", uid: first.alpha },
    });
    expect(await uidOf("beta"), "restart: never leaves the failed pod in place").toBe(first.beta);
    expect(deletes(agents.beta)).toHaveLength(0);
    expect(await runningUid("gamma"), "a running pod is never touched").toBe(first.gamma);
    expect(deletes(agents.gamma)).toHaveLength(0);
    expect(loopDeploys().map((d) => [d.agent, d.outcome, d.row])).toEqual([["alpha", "started", "terminated"]]);

    // The watch drops with the apiserver; the resourceVersion it resumes from is older than the new watch cache.
    await cp.killApiserver();
    await cp.restartApiserver();
    await until(
      "the server relisted after 410 Gone",
      () => (serve.errors().includes("relisted") ? true : undefined),
      60_000,
    );
    await cp.kubelet.setState(NS, agents.gamma.podName, { kind: "terminated", exitCode: 0 });
    await until(
      "gamma (always) replaced after a clean exit",
      async () => {
        const uid = await runningUid("gamma");
        return uid !== undefined && uid !== first.gamma ? uid : undefined;
      },
      60_000,
    );
    expect(creates(agents.gamma).map((r) => r.mode)).toEqual(["cli", "reconcile-loop"]);

    serve.child.kill("SIGTERM");
    expect(await serve.exited()).toEqual({ code: 0, signal: null });
    const verify = await runNode([MAIN, "audit", "verify", "--db", join(home, "k8s.db"), "--json"], {
      cwd: home,
      env: env(),
    });
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    for (const a of Object.values(agents)) expect(serve.errors() + serve.output()).not.toContain(a.nsec);
  });
});
