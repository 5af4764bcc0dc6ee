/**
 * What the controller store keeps of an instance as its node last reported it (issue 35), and how a list that reads
 * only the store says it. The lists' default (`berth instances`, `agents`) reads the store and asks no node; without
 * a record of what the nodes last said, every instance would read "unknown". The serve loop's observe step, a deploy's
 * observation and every `--refresh` record one row per placed instance; the lists show it with its age, and say so
 * plainly when it is old or was never recorded: a stored state is a report of the past, never a claim about now.
 *
 * Pure: the shell records the rows and passes the clock in.
 *
 * | what the node's verified status said of the instance | state        | lifecycle       |
 * |------------------------------------------------------|--------------|-----------------|
 * | a row: running, unhealthy, backoff                    | running      | the row's state |
 * | a row: loading, loaded, starting                      | not started  | the row's state |
 * | a row: stopped, exited, lost, failed, finished …      | terminated   | the row's state |
 * | a row in a state this berth does not know             | that state   | the row's state |
 * | no row (a verified answer that does not list it)      | absent       | null            |
 *
 * `state` is the agent-level word `berth agents` shows (core/agents/deploy-event.ts `agentStateOf`'s, for one
 * instance); `lifecycle` is the node's own word, what `berth instances` shows.
 */

/** One instance as its node last reported it. */
export interface ObservedInstance {
  readonly instance_id: string;
  readonly node_id: string;
  readonly state: string;
  readonly lifecycle: string | null;
  readonly restarts: number | null;
  readonly pid: number | null;
  readonly started_ms: number | null;
  /** When the controller had the node's answer (the controller's clock). */
  readonly seen_ms: number;
}

/** What of a node's status row an observation keeps. */
export interface ObservedRow {
  readonly state: string;
  readonly restarts?: number | undefined;
  readonly pid?: number | null | undefined;
  readonly started_ms?: number | null | undefined;
}

/**
 * Past this age a stored state is said to be stale. Three of `berth serve`'s 10 s ticks and the 5 s status timeout:
 * a serve loop that runs has recorded a newer one by then, so an older one means nothing is watching the nodes.
 */
export const OBSERVATION_STALE_MS = 45_000;

const RUNNING: ReadonlySet<string> = new Set(["running", "unhealthy", "backoff"]);
const NOT_STARTED: ReadonlySet<string> = new Set(["loading", "loaded", "starting"]);
const TERMINATED: ReadonlySet<string> = new Set(["stopped", "exited", "lost", "failed", "finished", "lease_stopped"]);

/** The row a verified answer gave for the instance (null: the answer did not list it) as a stored observation. */
export function observedInstanceOf(
  instanceId: string,
  nodeId: string,
  row: ObservedRow | null,
  seenMs: number,
): ObservedInstance {
  if (row === null)
    return {
      instance_id: instanceId,
      node_id: nodeId,
      state: "absent",
      lifecycle: null,
      restarts: null,
      pid: null,
      started_ms: null,
      seen_ms: seenMs,
    };
  const state = RUNNING.has(row.state)
    ? "running"
    : NOT_STARTED.has(row.state)
      ? "not started"
      : TERMINATED.has(row.state)
        ? "terminated"
        : row.state;
  return {
    instance_id: instanceId,
    node_id: nodeId,
    state,
    lifecycle: row.state,
    restarts: typeof row.restarts === "number" ? row.restarts : null,
    pid: typeof row.pid === "number" ? row.pid : null,
    started_ms: typeof row.started_ms === "number" ? row.started_ms : null,
    seen_ms: seenMs,
  };
}

/** What a list says of when it was seen. */
export type Seen =
  | { readonly kind: "never" }
  | { readonly kind: "fresh"; readonly age_ms: number }
  | { readonly kind: "stale"; readonly age_ms: number };

export function judgeSeen(seenMs: number | null, nowMs: number, staleAfterMs: number = OBSERVATION_STALE_MS): Seen {
  if (seenMs === null) return { kind: "never" };
  const age = Math.max(0, nowMs - seenMs);
  return age > staleAfterMs ? { kind: "stale", age_ms: age } : { kind: "fresh", age_ms: age };
}

/** How long ago, in the largest unit that fits: 4s, 12m, 3h, 2d. */
export function agoText(ageMs: number): string {
  const s = Math.max(0, Math.floor(ageMs / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/**
 * A stored state as a list prints it: `running (seen 4s ago)`, `running (last seen 3m ago, stale)`, or
 * `unknown (never seen)` when nothing was ever recorded of the instance.
 */
export function seenText(
  state: string | null,
  seenMs: number | null,
  nowMs: number,
  staleAfterMs: number = OBSERVATION_STALE_MS,
): string {
  const seen = judgeSeen(seenMs, nowMs, staleAfterMs);
  switch (seen.kind) {
    case "never":
      return `${state ?? "unknown"} (never seen)`;
    case "fresh":
      return `${state ?? "unknown"} (seen ${agoText(seen.age_ms)} ago)`;
    case "stale":
      return `${state ?? "unknown"} (last seen ${agoText(seen.age_ms)} ago, stale)`;
    default: {
      const never: never = seen;
      return never;
    }
  }
}
