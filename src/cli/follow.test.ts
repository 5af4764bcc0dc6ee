import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lastLines, newOutput } from "./follow.js";

describe("following a log from its tails", () => {
  it("prints only what was appended while the tail still holds the whole log", () => {
    expect(newOutput("a\nb\n", "a\nb\nc\n")).toBe("c\n");
    expect(newOutput("a\n", "a\n")).toBe("");
  });

  it("prints only what was appended after the window slid past the start", () => {
    const window = 8;
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.string({ minLength: 1, maxLength: 6 }), (before, appended) => {
        const whole = `${before}${appended}`;
        const previous = before.slice(-window);
        const current = whole.slice(-window);
        const printed = newOutput(previous, current);
        // What was printed is what the reader misses: the end of the stream, never more than the new window.
        expect(`${previous}${printed}`.endsWith(current)).toBe(true);
        expect(printed.length).toBeLessThanOrEqual(current.length);
      }),
    );
  });

  it("prints a tail that shares nothing with the previous one whole", () => {
    expect(newOutput("old old", "new")).toBe("new");
  });

  it("keeps the last N lines, with or without a final newline", () => {
    expect(lastLines("1\n2\n3\n", 2)).toBe("2\n3\n");
    expect(lastLines("1\n2\n3", 2)).toBe("2\n3");
    expect(lastLines("1\n", 5)).toBe("1\n");
    expect(lastLines("1\n2\n", 0)).toBe("");
  });
});
