import { describe, expect, it } from "vitest";
import { parseAgentSpec, splitSpecEnv } from "./spec.js";

const spec = (env: string, target = "mesh", extra = "  package: ./p\n") =>
  `apiVersion: berth/v1\nkind: Agent\nmetadata: { name: a }\nspec:\n  target: ${target}\n${extra}  config: { env: ${env} }\n`;

describe("secret env values in the agent spec (issue 17)", () => {
  it("takes valueFrom a file or an environment variable beside inline values, and splits them by name", () => {
    const r = parseAgentSpec(
      spec(
        "{ LOG_LEVEL: info, API_KEY: { valueFrom: { file: ./api.key } }, TOKEN: { valueFrom: { env: SCOUT_TOKEN } } }",
      ),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(splitSpecEnv(r.value.spec.config.env)).toEqual({
      inline: { LOG_LEVEL: "info" },
      from: { API_KEY: { file: "./api.key" }, TOKEN: { env: "SCOUT_TOKEN" } },
    });
  });

  it("names the field of a valueFrom that is neither a file nor an environment variable", () => {
    for (const bad of [
      "{ API_KEY: { valueFrom: { vault: x } } }",
      "{ API_KEY: { valueFrom: { env: 'not a name' } } }",
      "{ API_KEY: { value: x } }",
    ]) {
      const r = parseAgentSpec(spec(bad));
      expect(r.ok ? "" : r.error.join("\n"), bad).toMatch(/spec\.config\.env\.API_KEY/);
    }
  });

  it("refuses valueFrom for a Kubernetes agent, whose env is part of its pod spec", () => {
    const k8s = `  image: ghcr.io/a/b@sha256:${"a".repeat(64)}\n  kubernetes: { relay_url: wss://r, nsec_env: K, command: scout }\n`;
    const r = parseAgentSpec(spec("{ API_KEY: { valueFrom: { env: X } } }", "kubernetes", k8s));
    expect(r.ok ? "" : r.error.join("\n")).toMatch(
      /spec\.config\.env\.API_KEY\.valueFrom: valueFrom is for mesh agents/,
    );
  });
});
