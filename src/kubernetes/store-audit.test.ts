/**
 * The Kubernetes audit on the controller store's chain (issue 20), on a real PostgreSQL (test/support/engines.ts):
 * a whole deploy's write-ahead pairs land on the store's chain as source `k8s`, in order, and verify under the
 * controller key; an append the database refuses stops the mutation (E2) and reaches every caller, never swallowed.
 * The fake apiserver runs on the real clock here: the virtual one would take a database round trip for a deadlock.
 */
import { describe, expect, it } from "vitest";
import { engineHarness } from "../../test/support/engines.js";
import { inputsFor, NS } from "../../test/support/kubernetes/harness.js";
import { FakeCluster } from "../../test/support/kubernetes/fake-cluster.js";
import { EngineChain } from "../chain/engine-chain.js";
import { generateSigningKey } from "../keys/key-file.js";
import type { StoreEngine } from "../store/engine.js";
import { AuditWriteError } from "./audit.js";
import { realClock } from "../kit/clock.js";
import { memoryLogger } from "../kit/log.js";
import { type DeployDeps, deploy } from "./converge.js";
import { storeAudit } from "./store-audit.js";
import { DEFAULT_WAIT } from "./waiter.js";

const engines = engineHarness();

async function storeChain() {
  const engine = await engines.open("postgres");
  const key = generateSigningKey();
  const chain = await EngineChain.open(engine, key, "controller");
  return { engine, key, chain, audit: storeAudit(engine, chain) };
}

function deployDeps(audit: DeployDeps["audit"]): {
  fake: FakeCluster;
  deps: DeployDeps;
  log: ReturnType<typeof memoryLogger>;
} {
  const fake = new FakeCluster(realClock, { gracefulDeletionMs: 50, watchTimeoutMs: 5_000 });
  fake.addNamespace(NS);
  fake.onPodCreated = ({ ns, name }) => queueMicrotask(() => fake.start(ns, name));
  const log = memoryLogger();
  let seq = 0x0f3a91cc;
  return {
    fake,
    log,
    deps: {
      cluster: fake,
      clock: realClock,
      audit,
      log,
      random32: () => seq++,
      wait: DEFAULT_WAIT,
      mode: "cli",
      version: "test",
    },
  };
}

function runDeploy(deps: DeployDeps) {
  const start = realClock.now();
  return deploy(inputsFor(), deps, { startedAt: start, loopDeadlineAt: start + 25_000, deadlineSeconds: 30 });
}

/** From now on every insert into the store's events fails, as a full or read-only database would refuse it. */
async function refuseAppends(engine: StoreEngine): Promise<void> {
  const other = await engines.reopen(engine);
  await other.transaction(async (tx) => {
    await tx.exec(`CREATE FUNCTION refuse_event() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END $$ LANGUAGE plpgsql;
      CREATE TRIGGER refuse_event BEFORE INSERT ON audit_event FOR EACH ROW EXECUTE FUNCTION refuse_event();`);
  });
}

describe("the Kubernetes audit on a PostgreSQL controller store", { timeout: 60_000 }, () => {
  it("chains a deploy's write-ahead pairs and outcome on the store's chain as source k8s, in order, and the chain verifies", async () => {
    const { chain, key, audit } = await storeChain();
    expect(audit.chain).toBe("controller");
    const { fake, deps } = deployDeps(audit);
    const report = await runDeploy(deps);
    expect(report.answer.ok, JSON.stringify(report.answer)).toBe(true);
    expect(fake.mutations().map((c) => c.op)).toEqual(["createSecret", "createPod"]);
    const sealed = await audit.append({ source: "k8s", kind: "agent.deploy", payload: { agent: "scout" } });
    await audit.close();

    const events = await chain.find({ source: "k8s" });
    expect(events.map((e) => `${e.kind}:${String(e.payload.phase ?? "-")}`)).toEqual([
      "k8s.secret.create:intent",
      "k8s.secret.create:result",
      "k8s.pod.create:intent",
      "k8s.pod.create:result",
      "k8s.deploy.outcome:outcome",
      "agent.deploy:-",
    ]);
    expect(events.at(-1)?.hash).toBe(sealed.hash);
    expect(events[0]?.payload.action_id).toBe(events[1]?.payload.action_id);
    expect(events.every((e) => e.chain_id === chain.chainId)).toBe(true);
    const verified = await chain.verifyStored();
    expect([verified.ok, verified.chain_id]).toEqual([true, chain.chainId]);
    expect(chain.ownerKey).toBe(key.publicKey);
  });

  it("an intent the database refuses answers E2 and makes no mutation; the outcome's failure is logged as an error", async () => {
    const { engine, chain, audit } = await storeChain();
    await refuseAppends(engine);
    const { fake, deps, log } = deployDeps(audit);
    const report = await runDeploy(deps);
    expect(report.answer).toEqual({
      ok: false,
      error: expect.stringMatching(/^could not write the audit record: .*No space left on device/),
    });
    expect(fake.mutations(), "no record, no mutation").toEqual([]);
    expect(
      log.lines.some((l) => l.includes("could not record the deploy outcome") && l.includes("No space left")),
    ).toBe(true);
    expect(await chain.find({ source: "k8s" }), "nothing half-written").toEqual([]);
  });

  it("every kind of record rejects with AuditWriteError when its append fails; none is swallowed", async () => {
    const { engine, audit } = await storeChain();
    await refuseAppends(engine);
    const refused = expect.objectContaining({
      name: "AuditWriteError",
      message: expect.stringContaining("No space left on device"),
    });
    await expect(audit.intent("k8s.pod.delete", { object: "p" })).rejects.toEqual(refused);
    await expect(audit.result("a1", "k8s.pod.delete", { object: "p" })).rejects.toEqual(refused);
    await expect(audit.record("k8s.alert", { agent: "scout" })).rejects.toEqual(refused);
    await expect(audit.append({ source: "k8s", kind: "agent.deploy", payload: {} })).rejects.toBeInstanceOf(
      AuditWriteError,
    );
    await expect(
      audit.append({ source: "placement", kind: "agent.deploy", payload: {} }),
      "only source k8s",
    ).rejects.toThrow(/only source k8s/);
  });
});
