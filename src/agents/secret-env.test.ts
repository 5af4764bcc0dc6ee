import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveSpecEnv } from "./secret-env.js";
import { specFromText } from "./spec-file.js";

function deployEnv(env: Record<string, unknown>, processEnv: NodeJS.ProcessEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), "berth-secret-env-"));
  const path = join(dir, "agent.json");
  const loaded = specFromText(
    JSON.stringify({
      apiVersion: "berth/v1",
      kind: "Agent",
      metadata: { name: "scout" },
      spec: { target: "mesh", package: "./pkg", config: { env } },
    }),
    path,
  );
  if (!loaded.ok) throw new Error(loaded.error);
  return { dir, path, resolved: resolveSpecEnv(loaded.value, processEnv) };
}

describe("a mesh agent's env as a deploy reads it (issue 17)", () => {
  it("reads a variable and a file relative to the spec, keeps only references, and strips one trailing newline", () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-secret-env-"));
    writeFileSync(join(dir, "api.key"), "from-file\n");
    const path = join(dir, "agent.json");
    const loaded = specFromText(
      JSON.stringify({
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name: "scout" },
        spec: {
          target: "mesh",
          package: "./pkg",
          config: {
            env: {
              LEVEL: "debug",
              KEY: { valueFrom: { file: "./api.key" } },
              TOKEN: { valueFrom: { env: "SCOUT_TOKEN" } },
            },
          },
        },
      }),
      path,
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const r = resolveSpecEnv(loaded.value, { SCOUT_TOKEN: "t0ken" });
    expect(r).toEqual({
      ok: true,
      value: {
        env: { LEVEL: "debug", KEY: "from-file", TOKEN: "t0ken" },
        secretNames: ["KEY", "TOKEN"],
        refs: { KEY: { file: join(dir, "api.key") }, TOKEN: { env: "SCOUT_TOKEN" } },
      },
    });
  });

  it("refuses an unset variable, a missing, empty, oversized or NUL-holding file, naming the field and never a value", () => {
    const unset = deployEnv({ TOKEN: { valueFrom: { env: "SCOUT_TOKEN" } } });
    expect(unset.resolved).toEqual({
      ok: false,
      error: `${unset.path}: spec.config.env.TOKEN.valueFrom.env: environment variable SCOUT_TOKEN is not set (or empty) in the process that deploys (the CLI, or the berth serve / berth up of the home it went through); export it there`,
    });
    const missing = deployEnv({ KEY: { valueFrom: { file: "./gone" } } });
    expect(missing.resolved).toEqual({
      ok: false,
      error: `${missing.path}: spec.config.env.KEY.valueFrom.file: ${join(missing.dir, "gone")} does not exist (the secret value); check the path`,
    });
    const files = mkdtempSync(join(tmpdir(), "berth-secret-env-files-"));
    const cases: Array<[string, string, string]> = [
      ["empty", "\n", "is empty"],
      ["big", "x".repeat(32 * 1024 + 1), `has ${32 * 1024 + 1} bytes, more than ${32 * 1024}; is it the right file?`],
      ["nul", "se\0cret\n", "holds a NUL byte, which no environment value can carry"],
    ];
    for (const [name, content, says] of cases) {
      const file = join(files, name);
      writeFileSync(file, content);
      const r = deployEnv({ KEY: { valueFrom: { file } } });
      expect(r.resolved).toEqual({
        ok: false,
        error: `${r.path}: spec.config.env.KEY.valueFrom.file: ${file} ${says}`,
      });
    }
  });
});
