import { describe, expect, it } from "vitest";
import { ago, bytes, percent } from "./format";

describe("the dashboard's humanised figures", () => {
  it("write byte counts in binary units people read at a glance", () => {
    expect(bytes(25_275_990_016)).toBe("23.5 GiB");
    expect(bytes(512)).toBe("512 B");
    expect(bytes(1536)).toBe("1.50 KiB");
    expect(bytes(null)).toBe("—");
    expect(bytes(-1)).toBe("—");
  });

  it("say how long ago coarsely, never in the future", () => {
    const now = 1_800_000_000_000;
    expect(ago(now - 12_000, now)).toBe("12 s ago");
    expect(ago(now - 5 * 60_000, now)).toBe("5 min ago");
    expect(ago(now - 3 * 3_600_000, now)).toBe("3 h ago");
    expect(ago(now + 5_000, now)).toBe("0 s ago");
  });

  it("give a share of a known whole as a percentage", () => {
    expect(percent(3, 4)).toBe("75 %");
    expect(percent(3, 0)).toBe("—");
  });
});
