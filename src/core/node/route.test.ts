import { describe, expect, it } from "vitest";
import { routeFor } from "./route.js";

describe("the node's route choice", () => {
  it.each([
    [{ arch: "x86_64", os: "linux" }, "native"],
    [{ arch: "any", os: "any" }, "native"],
    [{ arch: "any", os: "linux" }, "native"],
    [{ arch: "aarch64", os: "linux" }, null],
    [{ arch: "x86_64", os: "darwin" }, null],
  ] as const)("variant %o on an x86_64 linux node has route %s (never emulated)", (variant, route) => {
    expect(routeFor(variant, { arch: "x86_64", os: "linux" })).toBe(route);
  });
  it("an arch no manifest names matches only `any`", () => {
    expect(routeFor({ arch: "x86_64", os: "linux" }, { arch: null, os: "linux" })).toBeNull();
    expect(routeFor({ arch: "any", os: "linux" }, { arch: null, os: "linux" })).toBe("native");
  });
});
