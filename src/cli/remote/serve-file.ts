/**
 * How a CLI finds the `berth serve` (or `berth up`) running on its own home (issue 21: "when a server is running, the
 * CLI's mutating verbs go through it instead of racing it"). The server writes `$BERTH_HOME/serve.json` (0600) once
 * it listens — its URL, its pid and that process's start time, and the SHA-256 of its TLS certificate when it serves
 * HTTPS — and removes it when it stops. A CLI trusts the file only while that very process lives (pid and start
 * time, so a reused pid does not count), and pins the certificate it names. The token is the home's `api.token`.
 */
import { X509Certificate } from "node:crypto";
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const SERVE_FILE = "serve.json";

export interface ServeRecord {
  readonly url: string;
  readonly pid: number;
  /** Field 22 of /proc/PID/stat (clock ticks since boot); null where there is no /proc. */
  readonly pid_start: string | null;
  readonly cert_sha256: string | null;
  readonly started_ms: number;
}

/** A process's start time, which a reused pid does not share. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Writes the record for this process; the returned function removes it (only while it still names this process). */
export function advertiseServer(home: string, url: string, certFile?: string): () => void {
  const path = join(home, SERVE_FILE);
  const record: ServeRecord = {
    url,
    pid: process.pid,
    pid_start: processStart(process.pid),
    cert_sha256: certFile
      ? new X509Certificate(readFileSync(certFile)).fingerprint256.replace(/:/g, "").toLowerCase()
      : null,
    started_ms: Date.now(),
  };
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  chmodSync(partial, 0o600);
  renameSync(partial, path);
  return () => {
    const current = readRecord(path);
    if (current?.pid === process.pid) rmSync(path, { force: true });
  };
}

function readRecord(path: string): ServeRecord | null {
  if (!existsSync(path)) return null;
  try {
    const r = JSON.parse(readFileSync(path, "utf8")) as Partial<ServeRecord>;
    if (
      typeof r.url !== "string" ||
      !/^https?:\/\/[^\s/]+$/.test(r.url) ||
      !Number.isInteger(r.pid) ||
      (r.pid as number) <= 0
    )
      return null;
    const pin = typeof r.cert_sha256 === "string" && /^[0-9a-f]{64}$/.test(r.cert_sha256) ? r.cert_sha256 : null;
    return {
      url: r.url,
      pid: r.pid as number,
      pid_start: typeof r.pid_start === "string" ? r.pid_start : null,
      cert_sha256: pin,
      started_ms: Number(r.started_ms) || 0,
    };
  } catch {
    return null;
  }
}

/** The server running on this home now, or null (no file, or its process is gone or is another one by now). */
export function findLocalServer(home: string): ServeRecord | null {
  const r = readRecord(join(home, SERVE_FILE));
  if (r === null || r.pid === process.pid || !alive(r.pid)) return null;
  if (r.pid_start !== null && processStart(r.pid) !== r.pid_start) return null;
  return r;
}
