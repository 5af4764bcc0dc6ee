/**
 * The node's content store and the package fetch over the request's own connection (spec/mesh.md §4.3, §5.4).
 * Bytes are written to a temporary file, fsynced, and renamed to `store/sha256/<hex>` only after size and hash
 * match, so nothing is ever executed from a partial or unverified copy.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { PinnedFile } from "../../core/packages/manifest.js";
import { encodeMessageFrame, LIMITS, parseMessageFrame } from "../../core/protocol/messages.js";
import type { FrameStream } from "../transport/frames.js";

/** A failed transfer (`fetch`) or a mismatch in what arrived (`verify`). */
export class FetchFailure extends Error {
  constructor(
    readonly code: "fetch" | "verify",
    message: string,
  ) {
    super(message);
    this.name = "FetchFailure";
  }
}

export class PackageFetcher {
  constructor(
    private readonly stream: FrameStream,
    private readonly packageId: string,
    private readonly timeoutMs: number,
  ) {}

  /** One range; returns the bytes (possibly fewer than asked at the end of the file). */
  async range(what: "manifest" | "file", sha256: string | null, offset: number, length: number): Promise<Buffer> {
    const ask = { type: "fetch" as const, what, package_id: this.packageId, sha256, offset, length };
    // Issue 12: the listener takes request-sized frames only; the data frame we ask for may be up to `length`.
    this.stream.allowFrame?.(length);
    try {
      await this.stream.send(encodeMessageFrame(ask));
    } catch (error) {
      throw new FetchFailure("fetch", `cannot ask for ${what}: ${(error as Error).message}`);
    }
    // One deadline for the fetch's answer and its data frame (a timer per wait, not an AbortSignal: recv-limit.ts).
    const deadline = Date.now() + this.timeoutMs;
    let frame: Uint8Array;
    try {
      frame = await this.stream.recv(this.timeoutMs);
    } catch (error) {
      throw new FetchFailure("fetch", `no answer to the fetch of ${what}: ${(error as Error).message}`);
    }
    const parsed = parseMessageFrame(frame);
    if (!parsed.ok) {
      this.stream.close();
      throw new FetchFailure("fetch", `protocol error during fetch: ${parsed.error}`);
    }
    const msg = parsed.value;
    if (msg.type === "fetch_error")
      throw new FetchFailure("fetch", `controller refused the fetch of ${what}: ${msg.reason}`);
    if (
      msg.type !== "data" ||
      msg.what !== what ||
      msg.package_id !== this.packageId ||
      msg.sha256 !== sha256 ||
      msg.offset !== offset ||
      msg.length !== length ||
      msg.data_length > length
    ) {
      this.stream.close();
      throw new FetchFailure("fetch", "protocol error: the answer does not match the fetch");
    }
    if (msg.data_length === 0) return Buffer.alloc(0);
    let data: Uint8Array;
    try {
      data = await this.stream.recv(deadline - Date.now());
    } catch (error) {
      throw new FetchFailure("fetch", `data frame did not arrive: ${(error as Error).message}`);
    }
    if (data.length !== msg.data_length) {
      this.stream.close();
      throw new FetchFailure("fetch", "protocol error: data frame length differs from data_length");
    }
    return Buffer.from(data);
  }

  /** The manifest text, in ranges, never more than 1 MiB. */
  async manifest(): Promise<string> {
    const parts: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const chunk = await this.range("manifest", null, offset, LIMITS.fetchRangeBytes);
      parts.push(chunk);
      offset += chunk.length;
      if (offset > LIMITS.manifestBytes) throw new FetchFailure("verify", "manifest larger than 1 MiB");
      if (chunk.length < LIMITS.fetchRangeBytes) break;
    }
    const text = Buffer.concat(parts);
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(text);
    } catch {
      throw new FetchFailure("verify", "manifest is not UTF-8");
    }
  }
}

export class ContentStore {
  readonly dir: string;

  constructor(root: string) {
    this.dir = join(root, "sha256");
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  pathOf(sha256: string): string {
    return join(this.dir, sha256);
  }

  /**
   * A stored copy whose bytes still hash to the pin (issue 12: a file changed on disk, by SD-card rot or a local
   * writer, must never be reused). Re-hashed on every use rather than trusted by inode and mtime: rot changes no
   * metadata, and hashing costs about 4 ms per MiB here against 3 ms for the copy itself (bench/mesh/content-hash.ts).
   */
  has(file: PinnedFile): boolean {
    const path = this.pathOf(file.sha256);
    return existsSync(path) && statSync(path).size === file.size && sha256OfFile(path) === file.sha256;
  }

  /** §5.4 step 7: reuse a copy that still verifies, or fetch in ranges and verify size and hash before renaming. */
  async ensure(file: PinnedFile, fetcher: PackageFetcher): Promise<string> {
    const final = this.pathOf(file.sha256);
    if (this.has(file)) return final;
    // A corrupt copy is dropped and fetched again from the controller.
    rmSync(final, { force: true });
    const tmp = join(this.dir, `.tmp-${randomBytes(8).toString("hex")}`);
    const fd = openSync(tmp, "wx", 0o600);
    const hash = createHash("sha256");
    let offset = 0;
    try {
      while (offset < file.size) {
        const length = Math.min(LIMITS.fetchRangeBytes, file.size - offset);
        const chunk = await fetcher.range("file", file.sha256, offset, length);
        if (chunk.length === 0)
          throw new FetchFailure("verify", `${file.path}: file is shorter than its pinned size ${file.size}`);
        writeSync(fd, chunk);
        hash.update(chunk);
        offset += chunk.length;
      }
      // One byte past the end must not exist: a longer file is a size mismatch even if its prefix hashes right.
      const beyond = await fetcher.range("file", file.sha256, file.size, 1);
      if (beyond.length > 0)
        throw new FetchFailure("verify", `${file.path}: file is larger than its pinned size ${file.size}`);
      const digest = hash.digest("hex");
      if (digest !== file.sha256)
        throw new FetchFailure("verify", `${file.path}: sha256 ${digest} does not match the pinned ${file.sha256}`);
      fsyncSync(fd);
      closeSync(fd);
      renameSync(tmp, final);
      return final;
    } catch (error) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
      rmSync(tmp, { force: true });
      throw error;
    }
  }
}

/**
 * SHA-256 (hex) of a file's bytes, read in blocks of at most 1 MiB. The block is sized to the file (issue 19: a
 * zero-filled 1 MiB buffer per call cost ~0.7 ms, twice per place, for a file of a few bytes) and not zero-filled:
 * only the bytes `readSync` wrote into it are hashed.
 */
export function sha256OfFile(path: string): string {
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  try {
    // One byte more than the size, so a file that grew since the stat is still read to its end in the loop below.
    const block = Buffer.allocUnsafe(Math.min(1024 * 1024, fstatSync(fd).size + 1));
    for (;;) {
      const n = readSync(fd, block, 0, block.length, null);
      if (n === 0) break;
      hash.update(block.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}
