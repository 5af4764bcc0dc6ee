/**
 * An instance's output on disk (spec/mesh.md §13, issue 13 "Operable"): `stdout.log` and `stderr.log`, appended to by
 * the instance itself (O_APPEND, no pipe, so output survives the daemon), rotated by size with a cap on what is kept:
 * `stdout.log` → `stdout.log.1` → … → `stdout.log.<keep>`, the oldest dropped. The instance holds its file open, so
 * rotation copies and truncates (logrotate's `copytruncate`): the next write lands at the start of the emptied file.
 * A write racing the copy may be lost, which logs (diagnostics, not audit) tolerate. At most
 * `(keep + 1) × rotateBytes` (plus one interval's growth) per stream.
 */
import {
  closeSync,
  copyFileSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

export interface LogRotation {
  /** A stream's current file is rotated once larger than this. */
  readonly rotateBytes: number;
  /** How many rotated files are kept. */
  readonly keep: number;
}

export const DEFAULT_ROTATION: LogRotation = { rotateBytes: 1024 * 1024, keep: 4 };

export const STREAMS = ["stdout.log", "stderr.log"] as const;

const DROPPED = ".dropped";

/** Rotates each stream of the instance directory whose current file is over the size. */
export function rotateLogs(dir: string, rotation: LogRotation): void {
  for (const name of STREAMS) {
    const path = join(dir, name);
    try {
      if (statSync(path).size <= rotation.rotateBytes) continue;
      const oldest = `${path}.${rotation.keep}`;
      if (existsSync(oldest)) {
        rmSync(oldest, { force: true });
        // Remember that output was dropped past the cap, so readers still learn the stream is not whole.
        writeFileSync(`${path}${DROPPED}`, "");
      }
      for (let i = rotation.keep - 1; i >= 1; i--)
        if (existsSync(`${path}.${i}`)) renameSync(`${path}.${i}`, `${path}.${i + 1}`);
      if (rotation.keep >= 1) copyFileSync(path, `${path}.1`);
      else writeFileSync(`${path}${DROPPED}`, "");
      const fd = openSync(path, "r+");
      try {
        ftruncateSync(fd, 0);
      } finally {
        closeSync(fd);
      }
    } catch {
      // no output yet, or the instance is being removed
    }
  }
}

/** The files of one stream, oldest first. */
function filesOf(dir: string, name: string, keep: number): string[] {
  const out: string[] = [];
  for (let i = keep; i >= 1; i--) if (existsSync(join(dir, `${name}.${i}`))) out.push(join(dir, `${name}.${i}`));
  if (existsSync(join(dir, name))) out.push(join(dir, name));
  return out;
}

/** The last `tailBytes` of a stream across its rotated files, and whether anything older exists or was dropped. */
export function tailStream(
  dir: string,
  name: string,
  tailBytes: number,
  keep: number,
): { text: string; truncated: boolean } {
  const files = filesOf(dir, name, keep);
  const chunks: Buffer[] = [];
  let want = tailBytes;
  let older = false;
  for (let i = files.length - 1; i >= 0; i--) {
    const fd = openSync(files[i] as string, "r");
    try {
      const size = fstatSync(fd).size;
      const n = Math.min(size, want);
      const buf = Buffer.alloc(n);
      readSync(fd, buf, 0, n, size - n);
      chunks.unshift(buf);
      want -= n;
      if (size > n) older = true;
    } finally {
      closeSync(fd);
    }
    if (want === 0) {
      if (i > 0) older = true;
      break;
    }
  }
  const truncated = older || existsSync(join(dir, `${name}${DROPPED}`)) || existsSync(join(dir, `${name}.trimmed`));
  return { text: new TextDecoder("utf-8").decode(Buffer.concat(chunks)), truncated };
}
