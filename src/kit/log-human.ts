/**
 * Issue 36 item 8: diagnostics a person reads on a terminal. pino writes one JSON object per line; on a TTY (unless
 * `--log-format json`) each is turned into one short line, `12:04:05 WARN  message  key=value …`, and the start-up
 * line about leading the store is left out when nobody else led it (a single controller: leaders and epochs are
 * nothing to its user). Not a TTY, or `--log-format json`: the JSON lines unchanged, for log collectors.
 */
import { Writable } from "node:stream";

export type LogFormat = "auto" | "text" | "json";

/** Text on a terminal unless asked otherwise; JSON everywhere else. */
export function humanLogs(format: LogFormat, isTTY: boolean | undefined): boolean {
  return format === "text" || (format === "auto" && isTTY === true);
}

const LEVELS: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO ", 40: "WARN ", 50: "ERROR", 60: "FATAL" };
const QUIET_KEYS: ReadonlySet<string> = new Set(["level", "time", "pid", "hostname", "msg", "v"]);
/** The node daemon's lines carry no pino pid: a `pid` there is an agent's, worth showing. */
export const NODE_QUIET_KEYS: ReadonlySet<string> = new Set(["level", "time", "msg"]);

/** One JSON log line as one line for people, or null when it says nothing to a single user. Pure. */
export function humanLogLine(json: string, quiet: ReadonlySet<string> = QUIET_KEYS): string | null {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  if (o.msg === "leader of the store" && o.why === "the store has had no leader") return null;
  const when = typeof o.time === "number" ? new Date(o.time).toISOString().slice(11, 19) : "";
  const level =
    typeof o.level === "number"
      ? (LEVELS[o.level] ?? String(o.level))
      : String(o.level ?? "")
          .toUpperCase()
          .padEnd(5);
  const fields = Object.entries(o)
    .filter(([k, v]) => !quiet.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`);
  return [when, level, String(o.msg ?? ""), ...(fields.length ? [` ${fields.join(" ")}`] : [])]
    .filter((p) => p !== "")
    .join(" ");
}

/** A stream for pino's `stream` option that writes human lines to `out`. */
export function humanLogStream(out: NodeJS.WritableStream = process.stderr): Writable {
  let pending = "";
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (line.trim() === "") continue;
        const text = humanLogLine(line);
        if (text !== null) out.write(`${text}\n`);
      }
      done();
    },
  });
}
