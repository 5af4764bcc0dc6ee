import { describe, expect, it } from "vitest";
import { LabelsSchema, parseSelector, selects } from "./labels.js";

describe("labels and selectors", () => {
  it("accepts Kubernetes label syntax and names the key or value that breaks it", () => {
    expect(LabelsSchema.safeParse({ team: "research", "berth.dev/tier": "gold", empty: "" }).success).toBe(true);
    const bad = LabelsSchema.safeParse({ "-team": "x" });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(["-team"]);
    expect(LabelsSchema.safeParse({ team: "has space" }).success).toBe(false);
    expect(LabelsSchema.safeParse({ team: "x".repeat(64) }).success).toBe(false);
  });

  it("selects by key=value, key!=value, key and !key, every requirement holding", () => {
    const sel = (s: string) => {
      const p = parseSelector(s);
      if (!p.ok) throw new Error(p.error);
      return p.value;
    };
    const labels = { team: "research", tier: "gold" };
    expect(selects(sel("team=research"), labels)).toBe(true);
    expect(selects(sel("team==research,tier=gold"), labels)).toBe(true);
    expect(selects(sel("team!=research"), labels)).toBe(false);
    expect(selects(sel("owner!=me"), labels)).toBe(true);
    expect(selects(sel("tier"), labels)).toBe(true);
    expect(selects(sel("!tier"), labels)).toBe(false);
    expect(selects(sel(""), {})).toBe(true);
    expect(parseSelector("team=a b")).toMatchObject({ ok: false });
    expect(parseSelector("!team=x")).toMatchObject({ ok: false });
  });
});
