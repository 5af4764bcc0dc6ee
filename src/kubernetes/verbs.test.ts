import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { verifyStoredChain } from "../chain/chain.js";
import { podManifest } from "../core/kubernetes/manifests.js";
import type { PodObject } from "../core/kubernetes/objects.js";
import { WHO } from "../../test/support/kubernetes/pods.js";
import { openDatabase } from "../store/sqlite.js";
import { k8sStatePaths, openK8sChain } from "./audit.js";
import { memoryLogger } from "../kit/log.js";
import { desiredFingerprint, harness, NS } from "../../test/support/kubernetes/harness.js";
import { clearForReplace, list, look, status, stop, type VerbDeps } from "./verbs.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { classify } from "../core/kubernetes/classify.js";
import { desiredIntent, intentTemplate } from "../core/kubernetes/intent.js";

const POD = WHO.podName;
const ref = { identity: WHO, namespace: NS };

function setup(state?: Record<string, unknown>, phase?: string) {
  const h = harness();
  h.fake.seedPod(NS, podManifest(WHO, h.config, "aaaaaaaa", desiredFingerprint(h.inputs)) as PodObject);
  h.fake.bind(NS, POD);
  if (state) h.fake.setAgentState(NS, POD, state, phase);
  const deps: VerbDeps = { cluster: h.fake, clock: h.clock, audit: h.audit, log: memoryLogger(), version: "test" };
  return { h, deps };
}

describe("operator verbs (spec/kubernetes.md §16)", () => {
  it("stop deletes even a started pod, fenced with its own grace period, and audits the verb and the delete", async () => {
    const { h, deps } = setup({ running: {} }, "Running");
    const before = h.fake.pod(NS, POD);
    const r = await h.clock.run(stop(deps, ref, { wait: true }));
    expect(r.ok).toBe(true);
    expect(h.fake.pod(NS, POD)).toBeUndefined();
    const del = h.audit.of("k8s.pod.delete", "intent")[0];
    expect(del).toMatchObject({
      authority: "user-stop",
      fence: { kind: "precondition", uid: before?.metadata.uid, resourceVersion: before?.metadata.resourceVersion },
    });
    expect(h.audit.of("k8s.stop").map((p) => p.phase)).toEqual(["intent", "result"]);
    expect(h.audit.of("k8s.stop", "intent")[0]?.operator).toBeTypeOf("string");
  });

  it("stop retries a failed precondition with a fresh fence at most three times, auditing every try", async () => {
    const { h, deps } = setup({ running: {} }, "Running");
    let n = 0;
    h.fake.beforeServe = (call) => {
      if (call.op === "deletePod") h.fake.setAgentState(NS, POD, { running: { n: ++n } }, "Running");
    };
    const r = await h.clock.run(stop(deps, ref, { wait: false }));
    expect(r).toEqual({ ok: false, message: `${POD} kept changing; gave up after 3 fenced attempts` });
    expect(h.fake.calls.filter((c) => c.op === "deletePod").map((c) => c.outcome)).toEqual([
      "Conflict",
      "Conflict",
      "Conflict",
    ]);
    expect(h.audit.of("k8s.pod.delete", "result").map((p) => p.outcome)).toEqual([
      "PreconditionFailed",
      "PreconditionFailed",
      "PreconditionFailed",
    ]);
  });

  it("stop refuses a foreign pod and touches nothing", async () => {
    const h = harness();
    h.fake.seedPod(NS, { metadata: { name: POD, labels: {} }, spec: { containers: [] } } as PodObject);
    const r = await h.clock.run(
      stop({ cluster: h.fake, clock: h.clock, audit: h.audit, log: memoryLogger(), version: "t" }, ref, {
        wait: false,
      }),
    );
    expect(r.ok).toBe(false);
    expect(h.fake.mutations()).toEqual([]);
  });

  it("replace refuses a started pod and mutates nothing", async () => {
    const { h, deps } = setup({ running: {} }, "Running");
    const r = await h.clock.run(clearForReplace(deps, ref, "a1", 60_000));
    expect(r.ok).toBe(false);
    expect(r.message).toMatch(/has started; replace only clears a never-started pod/);
    expect(h.fake.mutations()).toEqual([]);
  });

  it("replace clears a pull-failing pod (the escape from row 6) with a fenced, audited delete", async () => {
    const { h, deps } = setup({ waiting: { reason: "ImagePullBackOff", message: "401 Unauthorized" } });
    const r = await h.clock.run(clearForReplace(deps, ref, "a1", 60_000));
    expect(r).toEqual({ ok: true, message: "cleared" });
    expect(h.fake.calls.find((c) => c.op === "deletePod")?.authority).toBe("user-replace");
    expect(h.fake.pod(NS, POD)).toBeUndefined();
  });

  it("replace leaves a terminated pod to the deploy's own rows", async () => {
    const { h, deps } = setup({ terminated: { exitCode: 0 } });
    expect(await h.clock.run(clearForReplace(deps, ref, "a1", 60_000))).toEqual({
      ok: true,
      message: "left to deploy",
    });
    expect(h.fake.mutations()).toEqual([]);
  });

  it("status reports startup, intent, generation and condition without mutating", async () => {
    const { h } = setup({ waiting: { reason: "ContainerCreating" } }, "Pending");
    const r = await h.clock.run(status({ cluster: h.fake, clock: h.clock }, ref, desiredFingerprint(h.inputs)));
    expect(r).toMatchObject({
      observed: "verified",
      startup: "recoverable",
      intent: "matches",
      generation: "aaaaaaaa",
      binding: "1",
      node: "fake-node",
      condition: "the container is waiting, reason ContainerCreating",
    });
    expect(await h.clock.run(status({ cluster: h.fake, clock: h.clock }, ref, "0".repeat(64)))).toMatchObject({
      intent: "diverged",
    });
    expect(h.fake.mutations()).toEqual([]);
  });

  // Issue 18.2 follow-up: a never-started pod Buzz created for the same config (intent template v1 by its baseline,
  // v2 by its persistent-workspace line, intent.rs at block/buzz@25ddc1c) is one the deploy loop keeps; status agrees.
  it("status says matches for a never-started pod Buzz created with intent template v1 or v2 for the same config", async () => {
    const keys = Object.keys(harness().inputs.env);
    for (const version of [1, 2] as const) {
      const h = harness();
      const recorded = bytesToHex(sha256(utf8ToBytes(intentTemplate(h.inputs.config, keys, version))));
      h.fake.seedPod(NS, podManifest(WHO, h.config, "aaaaaaaa", recorded) as PodObject);
      h.fake.bind(NS, POD);
      h.fake.setAgentState(NS, POD, { waiting: { reason: "ContainerCreating" } }, "Pending");
      const want = desiredIntent(h.inputs.config, keys);
      expect(await h.clock.run(status({ cluster: h.fake, clock: h.clock }, ref, want))).toMatchObject({
        startup: "recoverable",
        intent: "matches",
      });
      // The loop's own verdict on the same observation: keep (observe), never a replace.
      const seen = await h.clock.run(look(h.fake, ref));
      expect(seen.kind === "verified" && classify(seen.pod, want.fingerprint, want.equivalents).kind).toBe("observe");
      const other = desiredIntent({ ...h.inputs.config, memoryLimit: "8Gi" }, keys);
      expect(await h.clock.run(status({ cluster: h.fake, clock: h.clock }, ref, other))).toMatchObject({
        intent: "diverged",
      });
      expect(h.fake.mutations()).toEqual([]);
    }
  });

  it("list shows managed pods with their binding and startup", async () => {
    const { h } = setup({ running: {} }, "Running");
    const rows = await h.clock.run(list(h.fake, null));
    expect(rows).toEqual([{ name: POD, namespace: NS, binding: "1", startup: "started", registry: "no record" }]);
  });
});

describe("the backend's own audit chain", () => {
  it("is created under BERTH_HOME with role k8s and verifies after write-ahead pairs", async () => {
    const home = mkdtempSync(join(tmpdir(), "berth-k8s-audit-"));
    const audit = openK8sChain(home);
    expect(audit.chain).toBe("k8s");
    const id = await audit.intent("k8s.pod.create", { object: POD, fence: { kind: "absent" } });
    await audit.result(id, "k8s.pod.create", { object: POD, outcome: "Created" });
    await audit.record("k8s.deploy.outcome", { ok: true, agent_id: POD });
    await audit.close();
    const db = openDatabase(k8sStatePaths(home).db, { readonly: true });
    const rows = db
      .prepare(
        "SELECT kind, json_extract(payload, '$.phase') AS phase, json_extract(payload, '$.action_id') AS action FROM audit_event ORDER BY seq",
      )
      .all() as Array<{
      kind: string;
      phase: string | null;
      action: string | null;
    }>;
    expect(rows.map((r) => `${r.kind}:${r.phase}`)).toEqual([
      "chain.genesis:null",
      "k8s.pod.create:intent",
      "k8s.pod.create:result",
      "k8s.deploy.outcome:outcome",
    ]);
    expect(rows[1]?.action).toBe(rows[2]?.action);
    const chain = db.prepare("SELECT chain_id, role FROM audit_chain WHERE own = 1").get() as {
      chain_id: string;
      role: string;
    };
    expect(chain.role).toBe("k8s");
    expect(verifyStoredChain(db, chain.chain_id, {}).ok).toBe(true);
    db.close();
  });
});
