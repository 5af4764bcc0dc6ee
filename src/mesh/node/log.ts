/**
 * The node daemon's diagnostics (issue 13 "Operable"): JSON lines in pino's format (the one format the server writes
 * with pino itself) on stderr (stdout carries the daemon's single `listening` line that scripts wait for). At `info`
 * the node says what it does: place, start, exit, stop, unload, refusal. Logs are diagnostics; the node chain is the
 * record, and nothing secret (environment values, secrets, keys) is ever logged.
 *
 * Issue 19: the node writes these lines itself rather than through pino. It logs plain fields at four levels and
 * nothing else of pino is used; the module and its stream helpers were 1.6–1.9 MiB of an idle daemon's memory.
 * A line is `{"level":30,"time":<ms>,"component":"node","node_id":…,<fields>,"msg":…}`, written synchronously so the
 * last lines before an exit are not lost (log.test.ts holds it to pino's own output).
 */
import { writeSync } from "node:fs";
import { humanLogLine, NODE_QUIET_KEYS } from "../../kit/log-human.js";

export const NODE_LOG_LEVELS = ["silent", "error", "warn", "info", "debug"] as const;
export type NodeLogLevel = (typeof NODE_LOG_LEVELS)[number];

type Fields = Readonly<Record<string, unknown>>;

export interface NodeLog {
  error(fields: Fields, msg: string): void;
  warn(fields: Fields, msg: string): void;
  info(fields: Fields, msg: string): void;
  debug(fields: Fields, msg: string): void;
}

/** pino's numbers for the levels. */
const LEVEL_VALUE = { debug: 20, info: 30, warn: 40, error: 50, silent: Number.POSITIVE_INFINITY } as const;

/**
 * A logger writing synchronously to `fd`, with pino's line format and levels. `human` (issue 36: the daemon's stderr is
 * a terminal and no `--log-format json`): each line as one short line for people (kit/log-human.ts), without the
 * component and node id every line of one daemon shares.
 */
export function nodeLogger(
  level: NodeLogLevel,
  nodeId: string,
  fd = 2,
  clock: () => number = Date.now,
  human = false,
): NodeLog {
  const threshold = LEVEL_VALUE[level];
  const base = human ? "" : `"component":"node","node_id":${JSON.stringify(nodeId)},`;
  const at = (value: number) => (fields: Fields, msg: string) => {
    if (value < threshold) return;
    // Fields named like the line's own members would make a line with two of them; pino lets them through too, so
    // the same line is written (JSON.parse keeps the last).
    const rest = JSON.stringify(fields);
    const body = rest === "{}" ? "" : `${rest.slice(1, -1)},`;
    const line = `{"level":${value},"time":${clock()},${base}${body}"msg":${JSON.stringify(msg)}}`;
    const text = human ? humanLogLine(line, NODE_QUIET_KEYS) : line;
    if (text !== null) writeFully(fd, `${text}\n`);
  };
  return {
    error: at(LEVEL_VALUE.error),
    warn: at(LEVEL_VALUE.warn),
    info: at(LEVEL_VALUE.info),
    debug: at(LEVEL_VALUE.debug),
  };
}

/** Writes all of `text`, retrying a non-blocking descriptor that is momentarily full (what pino's sync stream does). */
function writeFully(fd: number, text: string): void {
  let buf = Buffer.from(text, "utf8");
  for (let tries = 0; buf.length > 0 && tries < 1000; ) {
    try {
      const n = writeSync(fd, buf);
      buf = buf.subarray(n);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return; // a closed stderr loses diagnostics, never the daemon
      tries++;
    }
  }
}

/** For in-process nodes that were given no logger (tests, embedded use). */
export const silentNodeLog: NodeLog = { error() {}, warn() {}, info() {}, debug() {} };
