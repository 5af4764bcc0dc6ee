import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { agentSpecJsonSchema, agentSpecMarkdown } from "./spec-doc.js";
import { parseAgentSpec } from "./spec.js";

const docs = new URL("../../../docs/", import.meta.url);

describe("the agent spec's documents (issue 36)", () => {
  it("docs/agent-spec.md and docs/agent-spec.schema.json are what the schema generates (node dist/src/agents/spec-doc-write.js rewrites them)", () => {
    expect(readFileSync(new URL("agent-spec.md", docs), "utf8")).toBe(agentSpecMarkdown());
    expect(JSON.parse(readFileSync(new URL("agent-spec.schema.json", docs), "utf8"))).toEqual(agentSpecJsonSchema());
  });

  it("documents every field of both targets, and a spec naming the schema in $schema is accepted", () => {
    const md = agentSpecMarkdown();
    for (const field of [
      "metadata.name",
      "spec.package",
      "spec.image",
      "spec.restart",
      "spec.mesh.strategy",
      "spec.kubernetes.nsec_file",
      "spec.kubernetes.owner_pubkey",
      "spec.config.env",
    ]) {
      expect(md).toContain(`| \`${field}\` |`);
    }
    const schema = agentSpecJsonSchema() as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(["$schema", "apiVersion", "kind", "metadata", "spec"]),
    );
    const r = parseAgentSpec(
      JSON.stringify({
        $schema: "./agent-spec.schema.json",
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name: "a" },
        spec: { target: "mesh", package: "./p" },
      }),
    );
    expect(r.ok).toBe(true);
  });
});
