import { afterEach, describe, expect, it, vi } from "vitest";
import { takeTokenFromLocation } from "./session";

/** A window with just what session.ts touches: the address and sessionStorage. */
function at(hash: string) {
  const stored = new Map<string, string>();
  const location = { hash, pathname: "/", search: "" };
  vi.stubGlobal("window", { location });
  vi.stubGlobal("sessionStorage", {
    setItem: (k: string, v: string) => stored.set(k, v),
    getItem: (k: string) => stored.get(k) ?? null,
  });
  vi.stubGlobal("history", { replaceState: (_s: unknown, _t: string, url: string) => (location.hash = url.slice(1)) });
  return location;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("the token in the dashboard's address", () => {
  it("is taken into the session and leaves the address", () => {
    const location = at("#token=abc");
    expect(takeTokenFromLocation()).toBe("abc");
    expect(location.hash).toBe("");
  });

  it("leaves the view it was given beside it", () => {
    const location = at("#/instances&token=abc");
    expect(takeTokenFromLocation()).toBe("abc");
    expect(location.hash).toBe("#/instances");
    const before = at("#token=abc&/agents/heartbeat");
    expect(takeTokenFromLocation()).toBe("abc");
    expect(before.hash).toBe("#/agents/heartbeat");
  });
});
