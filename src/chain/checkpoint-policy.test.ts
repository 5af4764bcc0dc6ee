import { describe, expect, it } from "vitest";
import { checkpointPolicyFromEnv, checkpointPollMs } from "./checkpoint-policy.js";

describe("the checkpoint policy (issue 38)", () => {
  it("is every 1000 events and 600 s unless the environment says otherwise", () => {
    expect(checkpointPolicyFromEnv({})).toEqual({ everyEvents: 1000, everyMs: 600_000 });
    expect(
      checkpointPolicyFromEnv({ BERTH_CHECKPOINT_EVERY_EVENTS: "250", BERTH_CHECKPOINT_EVERY_SECONDS: "30" }),
    ).toEqual({ everyEvents: 250, everyMs: 30_000 });
  });

  it("refuses a value that is not a whole number in range, naming the variable", () => {
    expect(() => checkpointPolicyFromEnv({ BERTH_CHECKPOINT_EVERY_EVENTS: "1" })).toThrow(
      /^BERTH_CHECKPOINT_EVERY_EVENTS: /,
    );
    expect(() => checkpointPolicyFromEnv({ BERTH_CHECKPOINT_EVERY_SECONDS: "ten" })).toThrow(
      /^BERTH_CHECKPOINT_EVERY_SECONDS: /,
    );
  });

  it("is polled each minute, or each T when T is shorter", () => {
    expect(checkpointPollMs({ everyEvents: 1000, everyMs: 600_000 })).toBe(60_000);
    expect(checkpointPollMs({ everyEvents: 1000, everyMs: 5_000 })).toBe(5_000);
  });
});
