/**
 * Colour for people, never for programs: ANSI colour only when the stream is a terminal, NO_COLOR is unset or
 * empty (no-color.org), TERM is not "dumb", and the verb was not asked for --json. Everything else prints plain text,
 * so piped output, logs and tests see the same bytes a person would copy.
 */

interface MaybeTerminal {
  readonly isTTY?: boolean;
}

export interface Palette {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
}

export function colourAllowed(
  stream: MaybeTerminal,
  options: { json?: boolean | undefined; env?: NodeJS.ProcessEnv } = {},
): boolean {
  const env = options.env ?? process.env;
  if (options.json) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.TERM === "dumb") return false;
  return stream.isTTY === true;
}

const sgr = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;
const plain = (text: string) => text;

export function palette(enabled: boolean): Palette {
  return enabled
    ? { enabled, bold: sgr(1, 22), dim: sgr(2, 22), red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39) }
    : { enabled, bold: plain, dim: plain, red: plain, green: plain, yellow: plain };
}

/** The palette for what a verb prints on stdout. */
export function stdoutPalette(json?: boolean): Palette {
  return palette(colourAllowed(process.stdout, { json }));
}

/** The palette for diagnostics on stderr (errors, warnings, progress). */
export function stderrPalette(json?: boolean): Palette {
  return palette(colourAllowed(process.stderr, { json }));
}

// Words that mean "fine", "wait and see" and "look at this now", across agent states, liveness and verdicts.
const GOOD = new Set(["running", "alive", "ok", "placed", "started", "paired", "pinned", "finished"]);
const WAITING = new Set([
  "not started",
  "going away",
  "unsettled",
  "absent",
  "stale",
  "unknown",
  "discovered",
  "pending",
  "backoff",
]);

/**
 * Issue 35: a stored state with when it was seen (`running (seen 4s ago)`): the state coloured as paintState colours it,
 * the age dim, and a stale or never-seen one yellow whatever its state, since it says nothing certain about now.
 */
export function paintSeen(p: Palette, text: string): string {
  const at = text.indexOf(" (");
  if (at < 0) return paintState(p, text);
  const state = text.slice(0, at);
  const seen = text.slice(at);
  return /never seen|stale\)$/.test(seen) ? p.yellow(text) : `${paintState(p, state)}${p.dim(seen)}`;
}

/** Colours a state word by what it asks of the reader; unknown words stay plain. */
export function paintState(p: Palette, state: string): string {
  if (GOOD.has(state)) return p.green(state);
  if (WAITING.has(state)) return p.yellow(state);
  if (/^[A-Z]|unreachable|broken|failing|failed|unhealthy|terminated|dead|down|refused/.test(state))
    return p.red(state);
  return state;
}
