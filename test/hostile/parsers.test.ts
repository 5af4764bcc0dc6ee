/**
 * The hostile tier for berth's file and stdin parsers (issue 12, "The project's own hostile tier"): agent spec files,
 * package statements, the policy files (permits, revocations, signers, node.json) and the provider's stdin request.
 * Listeners have their own files here (api-*, frames-*, node-connections*); these parsers are pure, so fast-check
 * drives them directly. Each property states what a user or a peer can rely on whatever bytes they send: the parser
 * answers with a value (never throws), a refusal names where it failed, and a secret planted in the input is never
 * echoed by the refusal.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { parseAgentSpec } from "../../src/core/agents/spec.js";
import { parsePermits, parseRevocations } from "../../src/core/governance/policy.js";
import { parseRequest } from "../../src/core/kubernetes/request.js";
import { parseEnvelope } from "../../src/core/packages/manifest.js";
import { loadNodeConfig, NodeConfigError } from "../../src/mesh/node/config.js";
import { loadSigners } from "../../src/mesh/policy/files.js";

const RUNS = 300;
/** Looks like a secret (an nsec-ish token); a refusal must never carry it back. */
const SECRET = "nsec1plantedsecretvalue0123456789abcdefghijklmnopq";

const MESH_SPEC = {
  apiVersion: "berth/v1",
  kind: "Agent",
  metadata: { name: "scout" },
  spec: {
    target: "mesh",
    package: "./packages/scout",
    config: { args: ["--once"], env: { LOG_LEVEL: "info" } },
    mesh: { prefer: ["pi5"] },
  },
};

/** A JSON value with the planted secret somewhere inside, at any depth. */
const jsonWithSecret = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(SECRET),
    fc.jsonValue({ maxDepth: 2 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("op", "spec", "statement", "env", "nsec", "key")),
      tie("value"),
      { maxKeys: 4 },
    ),
  ),
})).value;

/** Replaces one leaf or member of a valid document by an arbitrary value: the near-miss a hostile file is. */
function mutate(doc: unknown, path: readonly string[], value: unknown): unknown {
  if (path.length === 0 || typeof doc !== "object" || doc === null) return value;
  const [head, ...rest] = path;
  const copy: Record<string, unknown> = Array.isArray(doc)
    ? ([...doc] as unknown as Record<string, unknown>)
    : { ...(doc as Record<string, unknown>) };
  copy[head as string] = mutate(copy[head as string], rest, value);
  return copy;
}

const specPaths = fc.constantFrom<readonly string[]>(
  ["apiVersion"],
  ["kind"],
  ["metadata", "name"],
  ["spec", "target"],
  ["spec", "package"],
  ["spec", "config", "env", "LOG_LEVEL"],
  ["spec", "config", "env", "NODE_OPTIONS"],
  ["spec", "config", "args"],
  ["spec", "mesh", "prefer"],
  ["spec", "mesh", "strategy"],
  ["spec", "replicas"],
);

describe("agent spec files, as a hostile user writes them", () => {
  it("any text is answered with a value: a spec or refusals, never a throw", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 400 }),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (text) => {
          const r = parseAgentSpec(text, "spec.yaml");
          if (!r.ok) {
            expect(r.error.length).toBeGreaterThan(0);
            for (const e of r.error) expect(e.startsWith("spec.yaml: ")).toBe(true);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a near-miss of a valid spec is refused naming the field it broke, and never echoes a planted secret", () => {
    fc.assert(
      fc.property(specPaths, jsonWithSecret, (path, value) => {
        const r = parseAgentSpec(JSON.stringify(mutate(MESH_SPEC, path, value)), "spec.json");
        if (r.ok) return;
        const text = r.error.join("\n");
        expect(text).not.toContain(SECRET);
        // The refusal points into the document: at the mutated member, one of its parents, or the document itself.
        expect(r.error.some((e) => /^spec\.json: (\(document\)|[a-zA-Z[\]0-9_.]+|not valid YAML)/.test(e))).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it("a YAML bomb of aliases is refused instead of expanding", () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 60; i++)
      lines.push(`a${i}: &a${i} [*${i === 1 ? "a" : `a${i - 1}`},*${i === 1 ? "a" : `a${i - 1}`}]`);
    const r = parseAgentSpec(lines.join("\n"));
    expect(r.ok).toBe(false);
  });
});

describe("package statements, as a hostile signer or a tampering peer sends them", () => {
  it("any text or JSON value is answered with a reason, never a throw, and the reason never echoes a planted secret", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 400 }),
          jsonWithSecret,
          jsonWithSecret.map((v) => JSON.stringify(v)),
        ),
        (input) => {
          const r = parseEnvelope(input);
          if (!r.ok) {
            expect(r.error).toMatch(/^manifest/);
            expect(r.error).not.toContain(SECRET);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a statement over 1 MiB is refused before it is parsed", () => {
    const r = parseEnvelope(`{"statement":"${"x".repeat(1024 * 1024)}"}`);
    expect(r).toEqual({ ok: false, error: "manifest larger than 1 MiB" });
  });
});

describe("policy files, as a hostile or broken file on a node or controller", () => {
  it("permits and revocations: any text loads or fails closed with an error, never a throw", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          jsonWithSecret.map((v) => JSON.stringify(v)),
        ),
        (text) => {
          for (const r of [parsePermits(text), parseRevocations(text)]) {
            if (!r.ok) {
              expect(r.error.length).toBeGreaterThan(0);
              expect(r.error).not.toContain(SECRET);
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  const dir = mkdtempSync(join(tmpdir(), "berth-hostile-policy-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("signers.json and node.json: any content is loaded, refused fail-closed, or refused naming the file — never a crash", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          jsonWithSecret.map((v) => JSON.stringify(v)),
        ),
        (text) => {
          writeFileSync(join(dir, "signers.json"), text);
          const signers = loadSigners(dir);
          if (!signers.loaded.ok) expect(signers.loaded.error).not.toContain(SECRET);
          else for (const key of signers.loaded.value) expect(key).toMatch(/^[0-9a-f]{64}$/);
          writeFileSync(join(dir, "node.json"), text);
          try {
            loadNodeConfig(dir);
          } catch (error) {
            expect(error).toBeInstanceOf(NodeConfigError);
            expect((error as Error).message).toContain("node.json");
            expect((error as Error).message).not.toContain(SECRET);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("the provider's stdin request, as a hostile desktop or a fuzzer sends it", () => {
  it("any JSON value is answered with a value; a refusal never echoes what the request carried", () => {
    fc.assert(
      fc.property(jsonWithSecret, (raw) => {
        const r = parseRequest(raw);
        if (!r.ok) {
          expect(r.error).toMatch(/^could not understand the request: /);
          expect(r.error).not.toContain(SECRET);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("a deploy whose members are near misses is refused naming a field, never echoing the agent's key", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("agent", "provider_config", "launch", "relay_url", "nsec"),
        jsonWithSecret,
        (member, value) => {
          const r = parseRequest({ op: "deploy", [member]: value, agent: { nsec: SECRET } });
          expect(r.ok ? "" : r.error).not.toContain(SECRET);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
