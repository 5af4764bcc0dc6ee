import { describe, expect, it } from "vitest";
import { LATE, within } from "./within.js";

describe("within", () => {
  it("gives the promise's value when it settles inside the wait", async () => {
    expect(await within(Promise.resolve(7), 1000)).toBe(7);
  });

  it("gives LATE when the promise has not settled by the end of the wait", async () => {
    const never = new Promise<number>(() => undefined);
    const started = Date.now();
    expect(await within(never, 20)).toBe(LATE);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
  });

  it("rejects with the promise's own error when it fails inside the wait", async () => {
    await expect(within(Promise.reject(new Error("refused")), 1000)).rejects.toThrow("refused");
  });
});
