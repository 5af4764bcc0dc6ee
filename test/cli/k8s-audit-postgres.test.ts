/**
 * `berth k8s deploy` on a PostgreSQL controller store (issue 20) when this machine's controller key is not the one
 * that owns the store's chain: the records could not be appended as the controller's, so the verb answers that it
 * could not open the audit chain before it touches the kubeconfig, and writes nothing — no event in the store, no
 * `k8s.db` or key in the home as a fallback. With the right key the same verb gets past the chain to the cluster.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { IMAGE, NSEC } from "../k8s-provider/cases.js";
import { builtPath } from "../support/built.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { runNode } from "../support/process.js";

const MAIN = builtPath("src/cli/entry/main.js");
let server: TestPostgres | null = null;
afterAll(async () => {
  await server?.stop();
});

const agentFile = (dir: string) => {
  const path = join(dir, "agent.yaml");
  writeFileSync(
    path,
    `agent:
  relay_url: wss://relay.example
  private_key_nsec: ${NSEC}
  launch: { command: goose, owner_pubkey: "${"a".repeat(64)}" }
provider_config: { namespace: buzz-agents-test, image: "${IMAGE}" }
`,
  );
  return path;
};

async function sourceK8sEvents(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, options: "-c default_transaction_read_only=on" });
  await client.connect();
  try {
    return Number(
      (await client.query<{ n: string }>("SELECT COUNT(*) AS n FROM audit_event WHERE source = 'k8s'")).rows[0]?.n,
    );
  } finally {
    await client.end();
  }
}

describe("berth k8s on a PostgreSQL store", { timeout: 60_000 }, () => {
  it("refuses to record under a key that does not own the store's chain, writing nothing anywhere; the owner's key gets to the cluster", async () => {
    server = await startPostgres();
    const url = await server.database();
    const run = (home: string, args: string[]) =>
      runNode([MAIN, ...args], {
        cwd: home,
        env: { BERTH_HOME: home, HOME: home, BERTH_DATABASE_URL: url, KUBECONFIG: join(home, "no-kubeconfig") },
      });
    const owner = mkdtempSync(join(tmpdir(), "berth-k8s-pg-owner-"));
    expect((await run(owner, ["keys", "new", "--json"])).code).toBe(0);
    expect((await run(owner, ["instances", "--json"])).code, "the store and its chain, owned by this home's key").toBe(
      0,
    );

    const other = mkdtempSync(join(tmpdir(), "berth-k8s-pg-other-"));
    expect((await run(other, ["keys", "new", "--json"])).code).toBe(0);
    const refused = await run(other, ["k8s", "deploy", "--local", "--json", agentFile(other)]);
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    const doc = JSON.parse(refused.stdout.trim()) as { ok: boolean; error: string };
    expect(doc.ok).toBe(false);
    expect(doc.error).toMatch(/^could not open the audit chain: /);
    expect(doc.error, "it says whose chain it is").toMatch(
      /audit chain [0-9a-f]{32} belongs to key [0-9a-f]{64}, not [0-9a-f]{64}; use the key file that created it/,
    );
    expect(refused.stdout + refused.stderr).not.toContain(NSEC);
    expect(await sourceK8sEvents(url)).toBe(0);
    expect(existsSync(join(other, "k8s.db")), "no fallback chain in the home").toBe(false);
    expect(existsSync(join(other, "keys", "k8s.key"))).toBe(false);

    // The owner's key opens the chain (and writes no k8s.db); the verb then fails only at the absent kubeconfig.
    const reached = await run(owner, ["k8s", "deploy", "--local", "--json", agentFile(owner)]);
    expect(reached.code).toBe(1);
    expect((JSON.parse(reached.stdout.trim()) as { error: string }).error).toMatch(/^could not load kubeconfig/);
    expect(existsSync(join(owner, "k8s.db"))).toBe(false);
  });
});
