import { describe, expect, it } from "vitest";
import { admit, type NodeCapacity } from "./admission.js";

const roomy: NodeCapacity = {
  instances: 0,
  maxInstances: 4,
  availableMemoryBytes: 1024 * 1024 * 1024,
  interpreters: new Set(["python3"]),
  provisionedSecrets: new Set(["API_TOKEN"]),
};
const launch = { program: "bin/run", memory_mb: 0, secrets: [] as string[] };

describe("node admission", () => {
  it("admits a launch the node has room, memory, interpreters and secrets for", () => {
    expect(admit({ ...launch, program: "@python3", memory_mb: 64, secrets: ["API_TOKEN"] }, roomy)).toEqual({
      ok: true,
    });
  });
  it.each([
    ["the instance limit is reached", launch, { instances: 4 }, "instance limit 4 reached"],
    [
      "the declared memory is more than is free",
      { ...launch, memory_mb: 2048 },
      {},
      "not enough memory: 2048 MiB declared",
    ],
    [
      "the interpreter is not declared",
      { ...launch, program: "@node" },
      {},
      "interpreter node is not declared on this node",
    ],
    [
      "a secret is not provisioned",
      { ...launch, secrets: ["OTHER"] },
      {},
      "secret OTHER is not provisioned on this node",
    ],
  ])("refuses when %s, naming why", (_rule, request, capacity, reason) => {
    expect(admit(request, { ...roomy, ...capacity })).toEqual({ ok: false, error: reason });
  });
  it("ignores free memory when the package declares none", () => {
    expect(admit(launch, { ...roomy, availableMemoryBytes: 0 })).toEqual({ ok: true });
  });
});
