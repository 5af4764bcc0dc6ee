/**
 * Issue 33 item 2, the Kubernetes half: a deploy aimed at a cluster that cannot be reached is refused and leaves no agent
 * record — `berth agents` does not list it, the controller store (read read-only) holds no row of it — only the
 * backend's `agent.deploy` audit event saying it failed. Fresh `berth` processes on one `$BERTH_HOME`; the kubeconfig
 * names a loopback port nobody listens on.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { NSEC } from "../k8s-provider/cases.js";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";

const IMAGE = `ghcr.io/block/buzz-sprig@sha256:${"17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76"}`;
const dir = mkdtempSync(join(tmpdir(), "berth-unreachable-cluster-"));
const home = join(dir, "home");
const kubeconfig = join(dir, "kubeconfig");
const spec = join(dir, "scout.yaml");

writeFileSync(
  kubeconfig,
  `apiVersion: v1
kind: Config
clusters: [{ name: gone, cluster: { server: "https://127.0.0.1:1", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: gone, context: { cluster: gone, user: u } }]
current-context: gone
`,
);
writeFileSync(
  spec,
  `apiVersion: berth/v1
kind: Agent
metadata: { name: scout }
spec:
  target: kubernetes
  image: ${IMAGE}
  kubernetes: { relay_url: "wss://relay.example", nsec_env: SCOUT_NSEC, command: goose, owner_pubkey: "${"a".repeat(64)}", provider_config: { namespace: berth-agents } }
`,
);

afterAll(killAll);

async function berthJson(...args: string[]): Promise<Record<string, unknown> & { code: number | null }> {
  const r = await runNode([builtPath("src/cli/entry/main.js"), ...args, "--json"], {
    cwd: tmpdir(),
    env: { KUBECONFIG: kubeconfig, BERTH_HOME: home, HOME: dir, BERTH_K8S_DEADLINE_SECONDS: "30", SCOUT_NSEC: NSEC },
  });
  expect(r.stdout + r.stderr, "the nsec never reaches the output").not.toContain(NSEC);
  try {
    return { ...(JSON.parse(r.stdout) as Record<string, unknown>), code: r.code };
  } catch {
    throw new Error(`berth ${args.join(" ")} printed no JSON (exit ${r.code}): ${r.stdout} ${r.stderr}`);
  }
}

function rows(db: string, sql: string): Array<Record<string, unknown>> {
  const d = new Database(join(home, db), { readonly: true });
  try {
    return d.prepare(sql).all() as Array<Record<string, unknown>>;
  } finally {
    d.close();
  }
}

describe("a deploy aimed at a cluster that cannot be reached", () => {
  it("is refused and leaves no agent record, only its audit event", async () => {
    const refused = await berthJson("deploy", spec);
    expect([refused.code, refused.ok, refused.outcome], String(refused.message)).toEqual([1, false, "failed"]);
    expect(String(refused.message)).toMatch(/ECONNREFUSED/);

    const listed = await berthJson("agents");
    expect(listed.code).toBe(0);
    expect((listed.agents as Array<{ name: string }>).map((a) => a.name)).toEqual([]);
    expect(rows("controller.db", "SELECT name FROM agent_registry")).toEqual([]);

    const deploys = rows("k8s.db", "SELECT payload FROM audit_event WHERE kind = 'agent.deploy' ORDER BY seq").map(
      (r) => JSON.parse(String(r.payload)) as Record<string, unknown>,
    );
    expect(deploys.map((e) => [e.agent, e.outcome])).toEqual([["scout", "failed"]]);
  }, 60_000);
});
