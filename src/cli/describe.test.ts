import { describe, expect, it } from "vitest";
import { describeKey, describeText } from "./describe.js";

describe("describe text", () => {
  it("prints a k8s status document as aligned Key: value lines with no JSON in them", () => {
    const doc = {
      name: "agent-0a1b2c3d4e5f",
      namespace: "default",
      observed: "verified",
      startup: "started",
      deletion_marked: false,
      intent: "matches",
      generation: null,
      condition: "Ready=True",
      age_seconds: 12,
      node: "kind-worker",
    };
    expect(describeText(doc)).toBe(
      [
        "Name:            agent-0a1b2c3d4e5f",
        "Namespace:       default",
        "Observed:        verified",
        "Startup:         started",
        "Deletion marked: false",
        "Intent:          matches",
        "Generation:      -",
        "Condition:       Ready=True",
        "Age seconds:     12",
        "Node:            kind-worker",
      ].join("\n"),
    );
  });

  it("indents a nested object under its key, lists objects as dashed items, and reads a _ms time as ISO 8601", () => {
    const text = describeText({
      instance_id: "scout-1",
      usage: { cpu_usec: 5, sampled_ms: 1_796_638_047_233 },
      observation: { instances: [{ node_id: "n1", pid: 7 }], unsettled: [] },
      tags: ["a", "b"],
    });
    expect(text).toBe(
      [
        "Instance ID: scout-1",
        "Usage:",
        "  CPU µs:  5",
        "  Sampled: 2026-12-07T10:07:27.233Z",
        "Observation:",
        "  Instances:",
        "    - Node ID: n1",
        "      PID:     7",
        "  Unsettled: -",
        "Tags:        a, b",
      ].join("\n"),
    );
  });

  it("names keys in words", () => {
    expect([
      describeKey("instance_id"),
      describeKey("started_ms", true),
      describeKey("deletionMarked"),
      describeKey("restart_policy"),
    ]).toEqual(["Instance ID", "Started", "Deletion marked", "Restart policy"]);
  });
});
