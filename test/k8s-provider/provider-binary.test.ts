/**
 * The provider executable over pipes (spec/kubernetes.md §3, §19.2): golden request/answer pairs for every case reachable
 * without a cluster, compared after key-sorted re-serialisation; extra arguments; unknown ops; oversized and fuzzed
 * stdin. Runs the built `dist/` output as a real OS process.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { CASES, IMAGE, NSEC } from "./cases.js";

const home = mkdtempSync(join(tmpdir(), "berth-provider-"));
const baseEnv = { BERTH_HOME: join(home, "state"), HOME: home, KUBECONFIG: join(home, "no-kubeconfig") };

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value as Record<string, unknown>)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

async function provider(stdin: unknown, opts: { args?: string[]; env?: NodeJS.ProcessEnv; entry?: string } = {}) {
  const input = typeof stdin === "string" ? stdin : JSON.stringify(stdin);
  const r = await runNode(
    [
      builtPath(opts.entry ?? "src/cli/entry/main.js"),
      ...(opts.entry ? [] : ["provider", "kubernetes"]),
      ...(opts.args ?? []),
    ],
    {
      input,
      cwd: tmpdir(),
      env: { ...baseEnv, ...(opts.env ?? {}) },
    },
  );
  const lines = r.stdout.split("\n");
  return {
    ...r,
    lines,
    answer:
      lines.length === 2 && lines[1] === "" ? (JSON.parse(lines[0] as string) as Record<string, unknown>) : undefined,
  };
}

afterAll(() => killAll());

describe("berth provider kubernetes over pipes", () => {
  it('echo \'{"op":"info"}\' prints one valid info line and exits 0', async () => {
    const r = await provider({ op: "info", request_id: "abc" });
    expect(r.code).toBe(0);
    expect(r.answer).toBeDefined();
    const a = r.answer as Record<string, unknown> & {
      config_schema: { properties: { namespace: { default: string } } };
    };
    expect(Object.keys(a).sort()).toEqual([
      "config_schema",
      "description",
      "name",
      "ok",
      "protocol_version",
      "version",
    ]);
    expect(a).toMatchObject({
      ok: true,
      name: "kubernetes",
      protocol_version: 1,
      description: "Runs agents as pods in a Kubernetes cluster",
    });
    expect(a.config_schema.properties.namespace.default).toMatch(/^buzz-agents-[a-z0-9]{6}$/);
    expect(JSON.stringify(a)).not.toContain("abc");
  });

  it("answers with a fresh namespace prefill on every info call", async () => {
    const [a, b] = await Promise.all([provider({ op: "info" }), provider({ op: "info" })]);
    const ns = (x: typeof a) =>
      (x.answer as { config_schema: { properties: { namespace: { default: string } } } }).config_schema.properties
        .namespace.default;
    expect(ns(a)).not.toBe(ns(b));
  });

  it("buzz-backend-berth behaves as berth provider kubernetes", async () => {
    const r = await provider({ op: "info" }, { entry: "src/cli/entry/buzz-backend.js" });
    expect(r.answer).toMatchObject({ ok: true, name: "kubernetes", protocol_version: 1 });
    // Extra arguments are ignored as baseline Buzz ignores them (issue 34); a preflight with company is refused.
    const ignored = await provider({ op: "info" }, { entry: "src/cli/entry/buzz-backend.js", args: ["--help"] });
    expect(ignored.answer).toMatchObject({ ok: true, name: "kubernetes", protocol_version: 1 });
    const refused = await provider(
      { op: "info" },
      { entry: "src/cli/entry/buzz-backend.js", args: ["--check-identity", "--help"] },
    );
    expect(refused.answer).toEqual({ ok: false, error: "unsupported provider arguments" });
  });

  it.each(CASES.map((c) => [c.name, c] as const))("golden: %s", async (_name, c) => {
    const r = await provider(c.stdin, { args: c.args ?? [] });
    expect(r.code).toBe(0);
    expect(JSON.stringify(sortKeys(r.answer))).toBe(JSON.stringify(sortKeys({ ok: false, error: c.error })));
    expect(r.stdout).not.toContain(NSEC);
    expect(r.stderr).not.toContain(NSEC);
  });

  it("D8: an environment over the Secret cap is refused with its byte count", async () => {
    const big = "x".repeat(1_048_576);
    const r = await provider({
      op: "deploy",
      agent: {
        relay_url: "wss://relay.example",
        private_key_nsec: NSEC,
        launch: { owner_pubkey: "a".repeat(64), env: { BIG: big } },
      },
      provider_config: { namespace: "buzz-agents-test", image: IMAGE },
    });
    // BIG + relay (19) + nsec twice (126) + owner (64) + buzz-dev-mcp (12) + 7200 (4) + nonce (8)
    expect(r.answer).toEqual({
      ok: false,
      error: "agent environment is 1048809 bytes; Kubernetes caps Secret data at 1048576",
    });
  });

  it("A2: stdin over 8 MiB is read to the end and refused", async () => {
    const r = await provider(`{"op":"info","pad":"${"x".repeat(8 * 1024 * 1024)}"}`);
    expect(r.code).toBe(0);
    expect(r.answer).toEqual({
      ok: false,
      error: "request is not valid JSON: the request is larger than 8388608 bytes",
    });
  });

  const validDeploy = {
    op: "deploy",
    agent: { relay_url: "wss://relay.example", private_key_nsec: NSEC, launch: { owner_pubkey: "a".repeat(64) } },
    provider_config: { namespace: "buzz-agents-test", image: IMAGE },
  };

  it("E1: when no audit home opens (the configured one and every fallback), the deploy is refused before any cluster contact", async () => {
    const file = join(home, "a-file");
    writeFileSync(file, "not a directory");
    const r = await provider(validDeploy, {
      env: { BERTH_HOME: file, XDG_STATE_HOME: join(file, "state"), TMPDIR: join(file, "tmp") },
    });
    expect(String(r.answer?.error)).toMatch(/^could not open the audit chain: /);
  });

  it("F1: a missing kubeconfig names the context as (current)", async () => {
    const r = await provider(validDeploy);
    expect(String(r.answer?.error)).toMatch(/^could not load kubeconfig for context \(current\): /);
    const named = await provider({
      ...validDeploy,
      provider_config: { ...validDeploy.provider_config, context: "prod" },
    });
    expect(String(named.answer?.error)).toMatch(/^could not load kubeconfig for context prod: /);
  });

  it("F2: an exec credential plugin that is not on PATH is named", async () => {
    const kubeconfig = join(home, "kubeconfig-exec");
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
        users: [
          {
            name: "u",
            user: {
              exec: { apiVersion: "client.authentication.k8s.io/v1", command: "berth-no-such-plugin", args: [] },
            },
          },
        ],
        contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
        "current-context": "ctx",
      }),
    );
    const r = await provider(validDeploy, { env: { KUBECONFIG: kubeconfig } });
    expect(r.answer).toEqual({
      ok: false,
      error:
        'kubeconfig context (current) authenticates with the credential plugin "berth-no-such-plugin", which is not on PATH. Install it or add its directory to PATH, then try again.',
    });
  });

  it("arbitrary stdin always yields one JSON line, exit 0 and no echo of a key (fuzzed)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 200 }),
          fc.json().map((j) => j.replace(/"/, `"${NSEC}`)),
          fc
            .jsonValue()
            .map((v) =>
              JSON.stringify({ op: "deploy", agent: { private_key_nsec: NSEC, relay_url: v }, provider_config: v }),
            ),
        ),
        async (stdin) => {
          const r = await provider(stdin);
          const seen = `stdin ${JSON.stringify(stdin.slice(0, 300))} → code ${r.code}, stdout ${JSON.stringify(r.stdout.slice(0, 300))}, stderr ${JSON.stringify(r.stderr.slice(0, 600))}`;
          expect(r.code, seen).toBe(0);
          expect(r.answer, seen).toBeDefined();
          expect(typeof r.answer?.ok, seen).toBe("boolean");
          expect(r.stdout.includes(NSEC), seen).toBe(false);
          expect(r.stderr.includes(NSEC), seen).toBe(false);
        },
      ),
      { numRuns: 6 },
    );
  }, 180_000);
});
