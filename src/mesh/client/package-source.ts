/**
 * What a controller serves to a node's `fetch` frames during one `place`/`load` (spec/mesh.md §4.3, §5.5): only the
 * manifest of the package the request names and the files that manifest pins. Each file's size and hash are
 * re-checked before it is served.
 */
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { MANIFEST_FILE, parseEnvelope, type Statement } from "../../core/packages/manifest.js";

export interface PackageSource {
  readonly packageId: string;
  readonly statement: Statement;
  /** The manifest bytes exactly as stored. */
  readonly manifest: Uint8Array;
  /** A range of a pinned file, or an error text for `fetch_error`. */
  readRange(sha256: string, offset: number, length: number): Buffer | string;
}

export class PackageDirSource implements PackageSource {
  readonly packageId: string;
  readonly statement: Statement;
  readonly manifest: Uint8Array;
  private readonly checked = new Set<string>();

  /**
   * @param opts.unchecked serve file bytes without re-checking size and hash: only for tests that prove the node
   *   refuses what a faulty controller sends.
   * @param opts.verified the manifest bytes the caller read from `dir` and verified, with what they parse to: served
   *   as they are instead of being read and parsed again (issue 19, controller/prepare.ts), so the manifest a node
   *   receives is the very one the controller checked.
   */
  constructor(
    readonly dir: string,
    private readonly opts: {
      unchecked?: boolean;
      verified?: { manifest: Uint8Array; packageId: string; statement: Statement };
    } = {},
  ) {
    if (opts.verified !== undefined) {
      this.manifest = opts.verified.manifest;
      this.packageId = opts.verified.packageId;
      this.statement = opts.verified.statement;
      return;
    }
    this.manifest = readFileSync(join(dir, MANIFEST_FILE));
    const parsed = parseEnvelope(Buffer.from(this.manifest).toString("utf8"));
    if (!parsed.ok) throw new Error(`${join(dir, MANIFEST_FILE)}: ${parsed.error}`);
    this.packageId = parsed.value.packageId;
    this.statement = parsed.value.envelope.statement;
  }

  readRange(sha256: string, offset: number, length: number): Buffer | string {
    const file = this.statement.files.find((f) => f.sha256 === sha256);
    if (!file) return `file ${sha256} is not pinned by package ${this.packageId}`;
    const path = join(this.dir, file.path);
    if (!this.opts.unchecked && !this.checked.has(sha256)) {
      let size: number;
      try {
        size = statSync(path).size;
      } catch {
        return `${file.path} is missing from the package`;
      }
      if (size !== file.size) return `${file.path} has ${size} bytes, pinned ${file.size}`;
      if (createHash("sha256").update(readFileSync(path)).digest("hex") !== file.sha256)
        return `${file.path} does not match its pinned hash`;
      this.checked.add(sha256);
    }
    const fd = openSync(path, "r");
    try {
      const buf = Buffer.alloc(length);
      const n = readSync(fd, buf, 0, length, offset);
      return buf.subarray(0, n);
    } finally {
      closeSync(fd);
    }
  }
}
