/**
 * Issue 12 (Medium): an admission policy that quotes the Secret it refuses must not carry the agent's nsec (or any
 * env value) into the provider's answer, `berth k8s deploy`'s error, the logs or the signed, append-only k8s chain.
 * A real kube-apiserver with a ValidatingAdmissionPolicy whose `messageExpression` echoes every data value of the
 * Secret (base64, as Secret data is in the admission object); the texts must still say what happened (H2 with the policy's refusal), redacted.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AdmissionregistrationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../k8s/control-plane.js";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { NSEC } from "./cases.js";

const IMAGE = `ghcr.io/block/buzz-sprig@sha256:${"17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"}`;
const NS = "berth-echo";
/** The nsec's 32-byte key (nsec1vl029mgp…), as a cluster could spell it. */
const NSEC_HEX = "67dea2ed018072d675f5415ecfaed7d2597555e202d85b3d65ea4e58d2d92ffa";
const API_KEY = "sk-live-4f1c2a9e0d7b";
const SECRETS = [NSEC, NSEC_HEX, API_KEY, "wss://relay.example/?token=r3lay-t0ken"];
const forms = (v: string) => [
  v,
  Buffer.from(v).toString("base64"),
  Buffer.from(v).toString("base64").replace(/=+$/, ""),
];

let cp: ControlPlane;
const home = mkdtempSync(join(tmpdir(), "berth-echo-"));
const env = () => ({ KUBECONFIG: cp.kubeconfigPath, BERTH_HOME: home, HOME: home, BERTH_K8S_DEADLINE_SECONDS: "30" });

const agent = {
  relay_url: "wss://relay.example/?token=r3lay-t0ken",
  private_key_nsec: NSEC,
  launch: { owner_pubkey: "a".repeat(64), command: "goose", env: { OPENAI_API_KEY: API_KEY } },
};

function expectNoSecret(text: string, where: string): void {
  for (const s of SECRETS)
    for (const f of forms(s)) expect(text.includes(f), `${where} carries ${f.slice(0, 12)}…`).toBe(false);
}

beforeAll(async () => {
  cp = await startControlPlane();
  const adm = cp.admin.makeApiClient(AdmissionregistrationV1Api);
  await adm.createValidatingAdmissionPolicy({
    body: {
      metadata: { name: "echo-secret-data" },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["secrets"] }],
        },
        validations: [
          {
            expression: "false",
            // Every value as the admission object holds it (Secret data is base64 there): what a careless policy
            // quoting the object would say. The raw and hex forms are pinned by src/core/kubernetes/scrub.test.ts.
            messageExpression:
              "'refusing secret data: ' + object.data.map(k, k + '=' + string(object.data[k])).join(', ')",
          },
        ],
      },
    },
  });
  await adm.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name: "echo-secret-data" },
      spec: {
        policyName: "echo-secret-data",
        validationActions: ["Deny"],
        // Issue 33 item 13: also the namespace named by the nsec itself (a valid 63-character label).
        matchResources: {
          namespaceSelector: {
            matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [NS, NSEC] }],
          },
        },
      },
    },
  });
  // The binding takes a moment to reach the admission plugin: probe with a throw-away Secret until it is refused.
  await cp.core.createNamespace({ body: { metadata: { name: NS } } });
  await cp.core.createNamespace({ body: { metadata: { name: NSEC } } });
  const deadline = Date.now() + 60_000;
  for (let i = 0; ; i++) {
    try {
      await cp.core.createNamespacedSecret({
        namespace: NS,
        body: { metadata: { name: `probe-${i}` }, stringData: { probe: "x" } },
      });
      await cp.core.deleteNamespacedSecret({ namespace: NS, name: `probe-${i}` });
    } catch (error) {
      if (String((error as { body?: unknown }).body ?? error).includes("refusing secret data")) break;
      throw error;
    }
    if (Date.now() > deadline) throw new Error("the admission policy never took effect");
    await new Promise((r) => setTimeout(r, 250));
  }
}, 120_000);

afterAll(async () => {
  killAll();
  await cp?.stop();
});

describe("secrets quoted by the cluster never leave berth", () => {
  it("the provider's answer names the refusal with every secret form redacted", async () => {
    const r = await runNode([builtPath("src/cli/entry/main.js"), "provider", "kubernetes"], {
      input: JSON.stringify({ op: "deploy", agent, provider_config: { namespace: NS, image: IMAGE } }),
      cwd: tmpdir(),
      env: env(),
    });
    const answer = JSON.parse(r.stdout.trim()) as { ok: boolean; error?: string };
    const all = r.stdout + r.stderr;
    expect(answer.ok).toBe(false);
    expect(answer.error).toMatch(
      /^could not create secret buzz-agent-7e7e9c42a91b-[0-9a-f]{8}: [A-Za-z]+: .*refusing secret data: /,
    );
    expect(answer.error).toContain("BUZZ_PRIVATE_KEY=[redacted]");
    expect(answer.error).toContain("OPENAI_API_KEY=[redacted]");
    expectNoSecret(all, "the provider's output");
  }, 120_000);

  it("berth k8s deploy's error is redacted the same way", async () => {
    const file = join(home, "agent.json");
    writeFileSync(file, JSON.stringify({ agent, provider_config: { namespace: NS, image: IMAGE } }));
    const r = await runNode([builtPath("src/cli/entry/main.js"), "k8s", "deploy", "--json", file], {
      cwd: tmpdir(),
      env: env(),
    });
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout.trim()) as { ok: boolean; error: string };
    expect(doc.error).toContain("NOSTR_PRIVATE_KEY=[redacted]");
    expectNoSecret(r.stdout + r.stderr, "berth k8s deploy");
  }, 120_000);

  it("an nsec pasted into the namespace is scrubbed from the answer and from every record of the signed chain (issue 33 item 13)", async () => {
    const r = await runNode([builtPath("src/cli/main.js"), "provider", "kubernetes"], {
      input: JSON.stringify({ op: "deploy", agent, provider_config: { namespace: NSEC, image: IMAGE } }),
      cwd: tmpdir(),
      env: env(),
    });
    const answer = JSON.parse(r.stdout.trim()) as { ok: boolean; error?: string };
    expect(answer.ok).toBe(false);
    expect(answer.error).toContain("refusing secret data");
    expectNoSecret(r.stdout + r.stderr, "the provider's output");
    const chain = await runNode([builtPath("src/cli/main.js"), "audit", "export", "--db", join(home, "k8s.db")], {
      cwd: tmpdir(),
      env: env(),
    });
    expect(chain.code).toBe(0);
    // The attempt is in the chain (its namespace redacted), and no form of the key is anywhere in it.
    expect(chain.stdout).toContain('"namespace":"[redacted]"');
    expectNoSecret(chain.stdout, "the exported chain");
  }, 120_000);

  it("the exported k8s chain holds the refusals and no secret form", async () => {
    const r = await runNode([builtPath("src/cli/entry/main.js"), "audit", "export", "--db", join(home, "k8s.db")], {
      cwd: tmpdir(),
      env: env(),
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("refusing secret data");
    expectNoSecret(r.stdout, "the exported chain");
  }, 60_000);
});
