/**
 * The node daemon's diagnostics (issue 13 "Operable"): pino JSON lines, the one format the server writes too, on
 * stderr (stdout carries the daemon's single `listening` line that scripts wait for). At `info` the node says what
 * it does: place, start, exit, stop, unload, refusal. Logs are diagnostics; the node chain is the record, and nothing
 * secret (environment values, secrets, keys) is ever logged.
 */
import { type Logger, pino } from "pino";

export type NodeLog = Logger;

export const NODE_LOG_LEVELS = ["silent", "error", "warn", "info", "debug"] as const;
export type NodeLogLevel = (typeof NODE_LOG_LEVELS)[number];

/** A logger writing synchronously to `fd` (so the last lines before an exit are not lost). */
export function nodeLogger(level: NodeLogLevel, nodeId: string, fd = 2): NodeLog {
  return pino({ level, base: { component: "node", node_id: nodeId } }, pino.destination({ fd, sync: true }));
}

/** For in-process nodes that were given no logger (tests, embedded use). */
export const silentNodeLog: NodeLog = pino({ level: "silent" });
