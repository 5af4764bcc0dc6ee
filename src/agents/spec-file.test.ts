import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSpecFile, readNsec } from "./spec-file.js";

const SECRET = "nsec1-this-must-never-be-echoed";

function specIn(dir: string, kubernetes: string): string {
  const path = join(dir, "k.yaml");
  writeFileSync(
    path,
    `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: k }\nspec:\n  target: kubernetes\n  image: img@sha256:${"a".repeat(64)}\n  kubernetes: ${kubernetes}\n`,
  );
  return path;
}

describe("reading an agent spec and its identity", () => {
  it("reads the nsec from a file relative to the spec, or from the named variable", () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-spec-"));
    writeFileSync(join(dir, "k.nsec"), `${SECRET}\n`);
    const fromFile = loadSpecFile(specIn(dir, "{ relay_url: r, command: c, nsec_file: ./k.nsec }"));
    if (!fromFile.ok) throw new Error(fromFile.error);
    expect(readNsec(fromFile.value, {})).toEqual({ ok: true, value: SECRET });
    const fromEnv = loadSpecFile(specIn(dir, "{ relay_url: r, command: c, nsec_env: K_NSEC }"));
    if (!fromEnv.ok) throw new Error(fromEnv.error);
    expect(readNsec(fromEnv.value, { K_NSEC: SECRET })).toEqual({ ok: true, value: SECRET });
  });

  it("names the field when the identity is missing, and never echoes a value", () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-spec-"));
    const env = loadSpecFile(specIn(dir, "{ relay_url: r, command: c, nsec_env: K_NSEC }"));
    if (!env.ok) throw new Error(env.error);
    const missing = readNsec(env.value, { OTHER: SECRET });
    expect(missing.ok).toBe(false);
    expect(!missing.ok && missing.error).toContain("spec.kubernetes.nsec_env");
    expect(JSON.stringify(missing)).not.toContain(SECRET);
    const file = loadSpecFile(specIn(dir, "{ relay_url: r, command: c, nsec_file: ./absent.nsec }"));
    if (!file.ok) throw new Error(file.error);
    const r = readNsec(file.value, {});
    expect(!r.ok && r.error).toContain("spec.kubernetes.nsec_file");
  });

  it("names the file when it cannot be read or parsed", () => {
    expect(loadSpecFile("/nonexistent/berth/agent.yaml")).toMatchObject({
      ok: false,
      error: expect.stringContaining("/nonexistent/berth/agent.yaml"),
    });
  });
});
