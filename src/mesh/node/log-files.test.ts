import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rotateLogs, tailStream } from "./log-files.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const fresh = () => {
  const d = mkdtempSync(join(tmpdir(), "berth-logs-"));
  dirs.push(d);
  return d;
};
const line = (i: number) => `line ${String(i).padStart(6, "0")}\n`;

describe("an instance's output files", () => {
  const rotation = { rotateBytes: 4096, keep: 3 };

  it("keep output beyond the current file: rotated by size, read back in order across the files", () => {
    const dir = fresh();
    const path = join(dir, "stdout.log");
    // 3000 lines of 12 bytes, rotated as they come, as the daemon's 10 s check would (here after every 100 lines).
    for (let i = 0; i < 3000; i++) {
      appendFileSync(path, line(i));
      if (i % 100 === 99) rotateLogs(dir, rotation);
    }
    const all = tailStream(dir, "stdout.log", 1 << 20, rotation.keep);
    const lines = all.text.trim().split("\n");
    // Consecutive and ending at the last line: nothing lost or reordered within what is kept.
    expect(lines.at(-1)).toBe("line 002999");
    for (let i = 1; i < lines.length; i++) expect(Number(lines[i]?.slice(5))).toBe(Number(lines[i - 1]?.slice(5)) + 1);
    // 36 000 bytes do not fit in 4 files of ~4 KiB: the oldest were dropped, and the reader is told.
    expect(all.truncated).toBe(true);
    expect(lines[0]).not.toBe("line 000000");
    // More than one file's worth is kept, and never more than the cap (keep + 1 files of at most rotateBytes + one interval).
    expect(all.text.length).toBeGreaterThan(rotation.rotateBytes);
    const total = readdirSync(dir)
      .filter((n) => n.startsWith("stdout.log.") || n === "stdout.log")
      .reduce((n, f) => n + statSync(join(dir, f)).size, 0);
    expect(total).toBeLessThanOrEqual((rotation.keep + 1) * (rotation.rotateBytes + 1200));
    expect(existsSync(join(dir, `stdout.log.${rotation.keep + 1}`))).toBe(false);
  });

  it("a tail smaller than the current file reads only its end and says older output exists", () => {
    const dir = fresh();
    for (let i = 0; i < 10; i++) appendFileSync(join(dir, "stderr.log"), line(i));
    expect(tailStream(dir, "stderr.log", 12, rotation.keep)).toEqual({ text: line(9), truncated: true });
    expect(tailStream(dir, "stderr.log", 1000, rotation.keep)).toEqual({
      text: Array.from({ length: 10 }, (_, i) => line(i)).join(""),
      truncated: false,
    });
  });

  it("a stream with no output reads empty", () => {
    expect(tailStream(fresh(), "stdout.log", 100, 3)).toEqual({ text: "", truncated: false });
  });
});
