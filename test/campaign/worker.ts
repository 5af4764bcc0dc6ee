/** One worker process of `--parallel N` (pool.ts): runs the chunks the parent hands it, one world at a time. */
import type { FromWorker, ToWorker } from "./pool.js";
import { describeSchedule, scheduleFor } from "./schedule.js";
import { runWorld } from "./run.js";
import { closeOpenWorlds, WorldSetupError } from "./world.js";

const setupFailures = new Map<number, number>();

const verbose = process.argv.includes("--verbose");
const send = (m: FromWorker) => process.send?.(m);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void closeOpenWorlds().finally(() => process.exit(130));
  });
}

process.on("message", (m: ToWorker) => {
  if (m.kind === "done") {
    process.disconnect?.();
    return;
  }
  void (async () => {
    try {
      const progress = (line: string) =>
        process.stderr.write(`${new Date().toISOString().slice(11, 19)} worker ${process.pid}: ${line}\n`);
      const { outcomes, rest } = await runWorld(m.seeds, { verbose, progress });
      for (const outcome of outcomes) send({ kind: "outcome", outcome });
      send({ kind: "finished", rest });
    } catch (e) {
      if (e instanceof WorldSetupError && (setupFailures.get(m.seeds[0] as number) ?? 0) < 3) {
        // Not a finding: the chunk goes back to the queue whole, for another world.
        setupFailures.set(m.seeds[0] as number, (setupFailures.get(m.seeds[0] as number) ?? 0) + 1);
        process.stderr.write(
          `worker ${process.pid}: world for seeds ${m.seeds[0]}… could not be set up (${e.message.slice(0, 200)}); queued again\n`,
        );
        send({ kind: "finished", rest: m.seeds });
        return;
      }
      const seed = m.seeds[0] as number;
      const error = `campaign error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`;
      send({
        kind: "outcome",
        outcome: {
          seed,
          schedule: describeSchedule(scheduleFor(seed)),
          faults: {},
          ops: {},
          violations: [error],
          notes: [],
          ms: 0,
          world: [seed],
        },
      });
      send({ kind: "finished", rest: m.seeds.slice(1) });
    }
  })();
});
send({ kind: "ready" });
