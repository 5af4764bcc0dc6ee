import { describe, expect, it } from "vitest";
import { KeyedLock } from "./keyed-lock.js";

describe("KeyedLock", () => {
  it("runs calls with the same key one after the other and calls with different keys side by side", async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const step = (name: string) => async () => {
      log.push(`${name} start`);
      await new Promise((r) => setTimeout(r, 20));
      log.push(`${name} end`);
      return name;
    };
    const results = await Promise.all([
      lock.run("a", step("a1")),
      lock.run("a", step("a2")),
      lock.run("b", step("b1")),
    ]);
    expect(results).toEqual(["a1", "a2", "b1"]);
    expect(log.indexOf("a1 end")).toBeLessThan(log.indexOf("a2 start"));
    expect(log.indexOf("b1 start")).toBeLessThan(log.indexOf("a1 end"));
  });

  it("a failing call releases the key for the next", async () => {
    const lock = new KeyedLock();
    await expect(lock.run("a", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await expect(lock.run("a", async () => "next")).resolves.toBe("next");
  });
});
