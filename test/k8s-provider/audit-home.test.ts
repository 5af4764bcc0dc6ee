/**
 * Issue 18.7: Buzz's provider has no audit home, so berth's must not make one a new way to fail. A call that ends
 * before any cluster contact (info, every refusal) creates nothing on the caller's disk and never depends on the home;
 * a deploy that reaches the cluster stage records in the configured home, or — when that cannot be opened — in the
 * first fallback that opens ($XDG_STATE_HOME/berth, then a per-user temporary directory), saying so on stderr.
 *
 * The unusable home is a path through a regular file (ENOTDIR): the tests run as root here, and root ignores the
 * permission bits a read-only directory would rely on; a chmod 0555 home is added when not root.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { IMAGE, NSEC } from "./cases.js";

const dir = mkdtempSync(join(tmpdir(), "berth-audit-home-"));
const blocker = join(dir, "a-file");
writeFileSync(blocker, "not a directory");
const unusableHomes = [join(blocker, "home")];
if (process.getuid?.() !== 0) {
  const ro = join(dir, "read-only");
  mkdirSync(ro);
  chmodSync(ro, 0o555);
  unusableHomes.push(join(ro, "home"));
}

const valid = {
  op: "deploy",
  agent: { relay_url: "wss://relay.example", private_key_nsec: NSEC, launch: { owner_pubkey: "a".repeat(64) } },
  provider_config: { namespace: "buzz-agents-test", image: IMAGE },
};

function provider(stdin: unknown, env: Record<string, string>) {
  return runNode([builtPath("src/cli/entry/main.js"), "provider", "kubernetes"], {
    input: JSON.stringify(stdin),
    cwd: dir,
    env: { KUBECONFIG: join(dir, "no-kubeconfig"), XDG_STATE_HOME: "", ...env },
  });
}

afterAll(() => killAll());

describe("the audit home never fails a provider call before cluster contact", () => {
  it("a refusal in a fresh home answers and creates no k8s.db and no keys folder", async () => {
    const home = mkdtempSync(join(tmpdir(), "berth-fresh-home-"));
    const r = await provider(
      { ...valid, agent: { ...valid.agent, relay_url: " " } },
      { HOME: home, BERTH_HOME: join(home, ".berth") },
    );
    expect(JSON.parse(r.stdout.trim())).toEqual({
      ok: false,
      error: "deploy refused: relay_url is empty — the agent would have no relay to connect to",
    });
    expect(readdirSync(home)).toEqual([]);
  });

  it.each(unusableHomes.map((h) => [h] as const))(
    "info and a refusal answer as usual with an unusable home %s",
    async (home) => {
      const info = await provider({ op: "info" }, { HOME: home, BERTH_HOME: home });
      expect(JSON.parse(info.stdout.trim())).toMatchObject({ ok: true, name: "kubernetes" });
      const refused = await provider(
        { ...valid, provider_config: { namespace: "Bad_NS", image: IMAGE } },
        { HOME: home, BERTH_HOME: home },
      );
      expect(refused.code).toBe(0);
      expect(JSON.parse(refused.stdout.trim()).error).toMatch(
        /^provider_config\.namespace "Bad_NS" is not a valid Kubernetes namespace/,
      );
    },
  );

  it.each(unusableHomes.map((h) => [h] as const))(
    "a deploy with an unusable home %s records in the fallback and reaches the cluster stage",
    async (home) => {
      const state = mkdtempSync(join(tmpdir(), "berth-state-"));
      const r = await provider(valid, { HOME: home, BERTH_HOME: home, XDG_STATE_HOME: state });
      // F1 (no kubeconfig): the call went past the audit stage instead of answering E1.
      expect(JSON.parse(r.stdout.trim()).error).toMatch(/^could not load kubeconfig for context \(current\): /);
      expect(r.stderr).toContain(`recording in ${join(state, "berth")} instead`);
      const db = new Database(join(state, "berth", "k8s.db"), { readonly: true });
      try {
        const kinds = (db.prepare("SELECT kind FROM audit_event ORDER BY seq").all() as Array<{ kind: string }>).map(
          (e) => e.kind,
        );
        expect(kinds).toContain("k8s.deploy.outcome");
      } finally {
        db.close();
      }
      expect(existsSync(join(blocker, "home"))).toBe(false);
    },
  );
});
