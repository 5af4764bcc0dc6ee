/**
 * `--watch` on the list verbs and `-f`/`--follow` on the log verbs: ask again on an interval until Ctrl-C. A list
 * is printed again only when it changed — redrawn in place on a terminal, appended on a pipe, one JSON document per
 * line with `--json` (the one case where --json prints more than one document: each line is a complete answer).
 */
import { answer, outputFormat } from "./output.js";
import { newOutput } from "./follow.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs until SIGINT or SIGTERM, then resolves (exit status 0: the person asked it to stop). */
function untilStopped(): { stopped: () => boolean; wait: (ms: number) => Promise<void> } {
  let stop = false;
  let wake: (() => void) | null = null;
  const onSignal = () => {
    stop = true;
    wake?.();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  return {
    stopped: () => stop,
    wait: (ms) =>
      stop
        ? Promise.resolve()
        : Promise.race([
            sleep(ms),
            new Promise<void>((r) => {
              wake = r;
            }),
          ]),
  };
}

export async function watchList(
  intervalMs: number,
  json: boolean | undefined,
  ask: () => Promise<{ doc: unknown; text: string }>,
): Promise<void> {
  const run = untilStopped();
  const terminal = process.stdout.isTTY === true && !json && outputFormat() !== "yaml";
  let last: string | null = null;
  while (!run.stopped()) {
    try {
      const { doc, text } = await ask();
      const key = JSON.stringify(doc);
      if (key !== last) {
        last = key;
        if (terminal)
          process.stdout.write(
            `\u001b[H\u001b[2J${new Date().toISOString()}  every ${intervalMs / 1000}s, Ctrl-C to stop\n\n`,
          );
        answer(json, doc, text);
        if (!terminal && !json && outputFormat() !== "json") process.stdout.write("\n");
        if (outputFormat() === "yaml") process.stdout.write("---\n");
      }
    } catch (error) {
      // A server restarting or a node going away is part of what a watch is for: say so and keep watching.
      process.stderr.write(`berth: ${(error as Error).message} (still watching)\n`);
    }
    await run.wait(intervalMs);
  }
}

/**
 * Prints a log's tails as they grow: stdout to stdout, stderr to stderr; a new instance starts its log afresh.
 * `printed`: the answer the caller already printed (its first, perhaps cut to the last lines), so that only what is
 * written after it is printed — not the same lines a second time.
 */
export async function followLog(
  intervalMs: number,
  ask: () => Promise<{ instance: string; stdout: string; stderr: string }>,
  printed: { instance: string; stdout: string; stderr: string } | null = null,
): Promise<void> {
  const run = untilStopped();
  let seen = printed;
  if (printed !== null) await run.wait(intervalMs);
  while (!run.stopped()) {
    try {
      const now = await ask();
      if (seen !== null && seen.instance !== now.instance) {
        process.stderr.write(`berth: now following instance ${now.instance} (was ${seen.instance})\n`);
        seen = null;
      }
      process.stdout.write(newOutput(seen?.stdout ?? "", now.stdout));
      process.stderr.write(newOutput(seen?.stderr ?? "", now.stderr));
      seen = now;
    } catch (error) {
      process.stderr.write(`berth: ${(error as Error).message} (still following)\n`);
    }
    await run.wait(intervalMs);
  }
}
