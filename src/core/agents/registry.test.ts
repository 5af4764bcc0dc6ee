import { describe, expect, it } from "vitest";
import {
  type AgentRecord,
  importEventDraft,
  importIsEventful,
  planRegistryImport,
  rememberEventDraft,
  specDigest,
} from "./registry.js";

const r = (name: string, over: Partial<AgentRecord> = {}): AgentRecord => ({
  name,
  target: "mesh",
  spec_path: `/s/${name}.yaml`,
  spec_text: `spec ${name}`,
  intent: `i-${name}`,
  deployed_ms: 1,
  ...over,
});

describe("taking a home's agents.db into the store (issue 20)", () => {
  it("a name the store does not know is inserted as the file has it", () => {
    expect(planRegistryImport([], [r("scout")])).toEqual({ insert: [r("scout")], kept: [], same: [] });
  });

  it("the store wins: a name it knows with another record is kept as the store has it, both intents named", () => {
    const plan = planRegistryImport([r("scout", { intent: "newer" })], [r("scout")]);
    expect(plan).toEqual({
      insert: [],
      kept: [{ name: "scout", file_intent: "i-scout", store_intent: "newer" }],
      same: [],
    });
    expect(importIsEventful(plan)).toBe(true);
  });

  it("a record the store holds exactly is a repeat of an earlier import: nothing to chain", () => {
    const plan = planRegistryImport([r("scout")], [r("scout")]);
    expect(plan).toEqual({ insert: [], kept: [], same: ["scout"] });
    expect(importIsEventful(plan)).toBe(false);
  });

  it("the import event names each agent's spec by digest, never its text", () => {
    const draft = importEventDraft("/h/agents.db", "ctl-a", planRegistryImport([], [r("scout")]));
    expect(draft.payload).toEqual({
      from: "/h/agents.db",
      host: "ctl-a",
      imported: [{ agent: "scout", target: "mesh", intent: "i-scout", spec_sha256: specDigest("spec scout") }],
      kept: [],
      same: [],
    });
  });
});

describe("remembering a deploy's spec", () => {
  it("chains the agent, its target, intent and spec path, and the spec by digest", () => {
    expect(rememberEventDraft(r("scout"))).toEqual({
      source: "placement",
      kind: "agent.remember",
      payload: {
        agent: "scout",
        target: "mesh",
        intent: "i-scout",
        spec_path: "/s/scout.yaml",
        spec_sha256: specDigest("spec scout"),
        deployed_ms: 1,
      },
    });
  });
});
