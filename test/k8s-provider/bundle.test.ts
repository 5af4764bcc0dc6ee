/**
 * Issue 18.3 / 13: `buzz-backend-berth` runs when copied alone. `berth provider install` writes the self-contained
 * bundle (scripts/bundle-provider), which is copied into an empty directory and run with `env -i PATH=/usr/bin:/bin`
 * — no node on that PATH, no HOME, no dist/ or node_modules beside it — as Buzz Desktop runs a staged sidecar. The
 * installed file's shebang names node by its absolute path; the copy is also run through process.execPath.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { schnorr } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtPath, repoRoot } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { BUZZ_WIRE_FIXTURES, INFO_REQUEST, RESPOND_TO_MATRIX, respondToRequest } from "./buzz-wire-fixtures.js";
import { CASES, NSEC } from "./cases.js";

const work = mkdtempSync(join(tmpdir(), "berth-bundle-"));
const alone = mkdtempSync(join(tmpdir(), "berth-bundle-alone-"));
const copied = join(alone, "buzz-backend-berth");

/** Runs `argv` with exactly `env` (env -i), stdin given, and returns its output. */
async function run(
  argv: string[],
  input: string | Buffer,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = spawnSync(argv[0] as string, argv.slice(1), { env, cwd: alone, input, encoding: "utf8", timeout: 60_000 });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const MINIMAL = { PATH: "/usr/bin:/bin" };

beforeAll(async () => {
  const built = await runNode([join(repoRoot, "scripts", "bundle-provider", "build.mjs")], { cwd: repoRoot });
  expect(built.code, built.stderr).toBe(0);
  const installed = await runNode(
    [builtPath("src/cli/entry/main.js"), "provider", "install", "--dir", work, "--json"],
    { cwd: tmpdir() },
  );
  expect(installed.code, installed.stderr).toBe(0);
  copyFileSync(join(work, "buzz-backend-berth"), copied);
}, 120_000);

afterAll(() => killAll());

describe("buzz-backend-berth copied alone", () => {
  it("the installed provider is one file whose shebang names this node by its absolute path", () => {
    expect(readdirSync(work)).toEqual(["buzz-backend-berth"]);
    expect(readFileSync(copied, "utf8").split("\n", 1)[0]).toBe(`#!${process.execPath}`);
  });

  it("answers info from an empty directory with env -i PATH=/usr/bin:/bin, run directly by its shebang", async () => {
    const r = await run([copied], JSON.stringify({ op: "info" }), MINIMAL);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toMatchObject({ ok: true, name: "kubernetes", protocol_version: 1 });
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
  });

  it("refuses a deploy with the catalogued text, and leaves nothing beside itself", async () => {
    const r = await run(
      [process.execPath, copied],
      JSON.stringify({
        op: "deploy",
        agent: { relay_url: "wss://r", private_key_nsec: "npub1abc" },
        provider_config: null,
      }),
      MINIMAL,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toEqual({
      ok: false,
      error:
        "provider_config.namespace is required: the info schema supplies a generated default, so an empty value means the form was cleared",
    });
    expect(readdirSync(alone)).toEqual(["buzz-backend-berth"]);
  });

  it.each(CASES.map((c) => [c.name, c] as const))("golden through the copy: %s", async (_name, c) => {
    const input = typeof c.stdin === "string" ? c.stdin : JSON.stringify(c.stdin);
    const r = await run([copied, ...(c.args ?? [])], input, { ...MINIMAL, HOME: work });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toEqual({ ok: false, error: c.error });
    expect(r.stdout + r.stderr).not.toContain(NSEC);
  });
});

describe("Buzz's provider-wire fixtures through berth provider kubernetes and the copied bundle", () => {
  const via = {
    "berth provider kubernetes": (input: string | Buffer, env: Record<string, string>) =>
      run([process.execPath, builtPath("src/cli/entry/main.js"), "provider", "kubernetes"], input, env),
    "a copied buzz-backend-berth": (input: string | Buffer, env: Record<string, string>) => run([copied], input, env),
  };
  const cases = Object.entries(via).flatMap(([how, exec]) =>
    BUZZ_WIRE_FIXTURES.map((f) => [`${f.name} via ${how}`, f, exec] as const),
  );

  it.each(cases)("%s", async (_name, fixture, exec) => {
    const home = mkdtempSync(join(tmpdir(), "berth-wire-home-"));
    const r = await exec(JSON.stringify(fixture.request), {
      ...MINIMAL,
      HOME: home,
      BERTH_HOME: home,
      KUBECONFIG: "/nonexistent/kubeconfig-for-fixture-tests",
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split("\n")).toHaveLength(2);
    const answer = JSON.parse(r.stdout) as { ok: boolean; error?: string };
    if ("reachesConnection" in fixture.response) {
      // Buzz's the_full_desktop_payload_is_accepted: it fails only at the connection, every field accepted.
      expect(answer.ok).toBe(false);
      expect(answer.error).toContain("kubeconfig");
    } else {
      expect(answer).toEqual(fixture.response);
    }
  });

  it("info carries the contract fields Buzz's info_response_carries_the_contract_fields reads (info.request.json)", async () => {
    for (const exec of Object.values(via)) {
      const r = await exec(JSON.stringify(INFO_REQUEST), MINIMAL);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.split("\n")).toHaveLength(2);
      const info = JSON.parse(r.stdout) as {
        ok: boolean;
        protocol_version: number;
        name: string;
        config_schema: {
          required: string[];
          properties: { namespace: { default: string }; image: { default: string } };
        };
      };
      expect(info).toMatchObject({ ok: true, protocol_version: 1, name: "kubernetes" });
      expect(info.config_schema.required).toEqual(["namespace", "image"]);
      expect(info.config_schema.properties.namespace.default.startsWith("buzz-agents-")).toBe(true);
      // The fork's newer assertion (zbkilla/buzz@2d88ec7d): the image prefill is the published sprig, tag and digest.
      const image = info.config_schema.properties.image.default;
      expect(image.startsWith("ghcr.io/block/buzz-sprig:") && image.includes("@sha256:")).toBe(true);
      expect(r.stdout).not.toContain("req-1");
    }
  });

  const matrix = Object.entries(via).flatMap(([how, exec]) =>
    RESPOND_TO_MATRIX.map((c) => [`${c.name} via ${how}`, c, exec] as const),
  );
  // Buzz's the_respond_to_gate_matches_the_harness_acceptance_surface: under a kubeconfig that cannot exist, the error
  // text is the ordering assertion — "kubeconfig" means the gate passed, anything else must be the gate's refusal.
  it.each(matrix)("respond-to gate: %s", async (_name, c, exec) => {
    const home = mkdtempSync(join(tmpdir(), "berth-wire-home-"));
    const r = await exec(JSON.stringify(respondToRequest(c)), {
      ...MINIMAL,
      HOME: home,
      BERTH_HOME: home,
      KUBECONFIG: "/nonexistent/kubeconfig-for-fixture-tests",
    });
    expect(r.code, r.stderr).toBe(0);
    const error = String((JSON.parse(r.stdout) as { error?: string }).error ?? "");
    expect(error.includes("kubeconfig"), error).toBe(c.reachesCluster);
    if (!c.reachesCluster) expect(error).toContain("deploy refused");
  });

  // main.rs at block/buzz@3fac2c2: local_identity_preflight_returns_only_public_pod_identity and
  // identity_policy_refusal_precedes_cluster_connection_and_hides_secrets, through both entry points.
  it("--check-identity answers only the public pod identity for an approved pair with the owner's attestation; the same deploy reaches the connection", async () => {
    const agentHex = "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"; // NSEC's key
    const ownerSecret = new Uint8Array(32);
    ownerSecret[31] = 9;
    const ownerHex = bytesToHex(schnorr.getPublicKey(ownerSecret));
    const conditions = `kind=1&created_at>${Math.floor(Date.now() / 1000) - 600}`;
    const digest = sha256(utf8ToBytes(`nostr:agent-auth:${agentHex}:${conditions}`));
    const authTag = JSON.stringify(["auth", ownerHex, conditions, bytesToHex(schnorr.sign(digest, ownerSecret))]);
    const request = {
      op: "deploy",
      agent: {
        relay_url: "wss://example.invalid",
        private_key_nsec: NSEC,
        auth_tag: authTag,
        launch: { owner_pubkey: ownerHex },
      },
      provider_config: {
        namespace: "test",
        image: `example.invalid/pilot@sha256:${"a".repeat(64)}`,
        identity_policy: { agent_pubkey: agentHex, owner_pubkey: ownerHex },
      },
    };
    const env = { ...MINIMAL, HOME: work, KUBECONFIG: "/nonexistent/kubeconfig-for-fixture-tests" };
    const forged = { ...request, agent: { ...request.agent, auth_tag: "synthetic-secret-not-an-attestation" } };
    const entries = [
      (args: string[], input: string) =>
        run([process.execPath, builtPath("src/cli/entry/main.js"), "provider", "kubernetes", ...args], input, env),
      (args: string[], input: string) => run([copied, ...args], input, env),
    ];
    for (const exec of entries) {
      const preflight = await exec(["--check-identity"], JSON.stringify(request));
      expect(preflight.code, preflight.stderr).toBe(0);
      expect(JSON.parse(preflight.stdout)).toEqual({ ok: true, agent_id: "buzz-agent-7e7e9c42a91b" });
      const deploy = JSON.parse((await exec([], JSON.stringify(request))).stdout) as { ok: boolean; error: string };
      expect(deploy.ok).toBe(false);
      expect(deploy.error).toContain("kubeconfig");
      for (const args of [[], ["--check-identity"]]) {
        const r = await exec(args, JSON.stringify(forged));
        expect(JSON.parse(r.stdout)).toEqual({ ok: false, error: "owner attestation verification failed" });
        expect(r.stdout + r.stderr).not.toContain("synthetic-secret");
      }
      const info = await exec(["--check-identity"], JSON.stringify({ op: "info" }));
      expect(JSON.parse(info.stdout)).toEqual({ ok: false, error: "identity preflight requires a deploy request" });
    }
  }, 180_000);

  it("stdin that is not UTF-8 is a failed read, as Buzz's read_to_string: exit 1, nothing on stdout", async () => {
    for (const exec of Object.values(via)) {
      const r = await exec(Buffer.from([0x7b, 0xff, 0x7d]), MINIMAL);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("could not read the request from stdin: stream did not contain valid UTF-8");
    }
  });
});
