/**
 * Issue 12: the node re-hashes a stored package file before every reuse and the copy it materialises. Figure: the
 * cost per MiB of that hash against a plain copy of the same file (the work materialising does anyway), same run.
 * Printed, never asserted. Run after `npm run build:test`.
 */
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256OfFile } from "../../src/mesh/node/content.js";
import { ratio } from "../support.js";

const dir = mkdtempSync(join(tmpdir(), "berth-bench-hash-"));
const MIB = 16;
const file = join(dir, "blob");
writeFileSync(file, randomBytes(MIB * 1024 * 1024));

function timed(fn: () => void, rounds = 10): number {
  fn();
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) fn();
  return Number(process.hrtime.bigint() - start) / 1e6 / rounds / MIB;
}

const hashMs = timed(() => sha256OfFile(file));
const copyMs = timed(() => copyFileSync(file, join(dir, "copy")));
console.log(`sha256 of a stored file: ${hashMs.toFixed(2)} ms/MiB; copyFileSync of it: ${copyMs.toFixed(2)} ms/MiB`);
ratio("re-verify hash vs copy, per MiB", hashMs, copyMs);
rmSync(dir, { recursive: true, force: true });
