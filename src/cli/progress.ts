/**
 * Progress for long waits, on stderr so stdout stays the answer. On a terminal an ora spinner whose text is the
 * latest condition; elsewhere (a pipe, a CI log) one plain line per new condition; with --json nothing at all, so the
 * one JSON document is the whole of the output a program sees.
 */
import type { Ora } from "ora";
import { colourAllowed } from "./style.js";

export interface Progress {
  /** Shows a new condition; repeating the current one prints nothing. */
  update(condition: string): void;
  /** Clears the spinner (a terminal keeps no half line); plain lines stay as a log. */
  stop(): void;
}

export interface ProgressOptions {
  readonly json?: boolean | undefined;
  readonly stream?: NodeJS.WriteStream;
}

/**
 * A spinner needs a real terminal: a TTY that is not "dumb" and knows its width (ora counts the lines to clear by
 * the width; a terminal of width 0, as `script` gives without a controlling terminal, would make it clear forever).
 */
function spinnerFits(stream: NodeJS.WriteStream): boolean {
  return stream.isTTY === true && process.env.TERM !== "dumb" && (stream.columns ?? 0) > 0;
}

export function startProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  if (options.json) return { update: () => {}, stop: () => {} };
  let last = "";
  if (!spinnerFits(stream)) {
    return {
      update(condition) {
        if (condition === last) return;
        last = condition;
        stream.write(`… ${condition}\n`);
      },
      stop: () => {},
    };
  }
  // ora is loaded on the first condition: verbs that never wait do not pay for it at start-up.
  let spinner: Ora | null = null;
  let stopped = false;
  let requested = false;
  return {
    update(condition) {
      if (condition === last) return;
      last = condition;
      if (spinner !== null) {
        spinner.text = condition;
        return;
      }
      if (requested) return;
      requested = true;
      void import("ora").then(({ default: ora }) => {
        if (stopped) return;
        // The terminal check is ours (above), so ora's own guess (it turns itself off when CI is set) is not asked.
        // discardStdin off: Ctrl-C must stay a SIGINT the verbs' own handlers see.
        spinner = ora({
          text: last,
          stream,
          isEnabled: true,
          color: colourAllowed(stream) ? "cyan" : false,
          discardStdin: false,
        }).start();
      });
    },
    stop() {
      stopped = true;
      spinner?.stop();
      spinner = null;
    },
  };
}

/** Runs a wait with a spinner on a terminal showing what is being waited for (nothing on a pipe or with --json). */
export async function withSpinner<T>(what: string, json: boolean | undefined, fn: () => Promise<T>): Promise<T> {
  const stream = process.stderr;
  if (json || !spinnerFits(stream)) return fn();
  const progress = startProgress({ json, stream });
  progress.update(what);
  try {
    return await fn();
  } finally {
    progress.stop();
  }
}
