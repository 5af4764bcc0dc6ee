/**
 * Progress for long waits, on stderr so stdout stays the answer. On a terminal an ora spinner whose text is the
 * latest condition; elsewhere (a pipe, a CI log) one plain line per new condition; with --json nothing at all, so the
 * one JSON document is the whole of the output a program sees.
 */
import ora, { type Ora } from "ora";
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

export function startProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  if (options.json) return { update: () => {}, stop: () => {} };
  let last = "";
  if (!stream.isTTY) {
    return {
      update(condition) {
        if (condition === last) return;
        last = condition;
        stream.write(`… ${condition}\n`);
      },
      stop: () => {},
    };
  }
  let spinner: Ora | null = null;
  return {
    update(condition) {
      if (condition === last) return;
      last = condition;
      // discardStdin off: Ctrl-C must stay a SIGINT the verbs' own handlers see.
      if (spinner === null) spinner = ora({ text: condition, stream, color: colourAllowed(stream) ? "cyan" : false, discardStdin: false }).start();
      else spinner.text = condition;
    },
    stop() {
      spinner?.stop();
      spinner = null;
    },
  };
}

/** Runs a wait with a spinner on a terminal showing what is being waited for (nothing on a pipe or with --json). */
export async function withSpinner<T>(what: string, json: boolean | undefined, fn: () => Promise<T>): Promise<T> {
  const stream = process.stderr;
  if (json || !stream.isTTY) return fn();
  const progress = startProgress({ json, stream });
  progress.update(what);
  try {
    return await fn();
  } finally {
    progress.stop();
  }
}
