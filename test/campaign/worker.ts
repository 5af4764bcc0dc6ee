/** One worker process of `--parallel N` (pool.ts): runs the chunks the parent hands it, one world at a time. */
import type { FromWorker, ToWorker } from "./pool.js";
import { describeSchedule, scheduleFor } from "./schedule.js";
import { runWorld } from "./run.js";
import { closeOpenWorlds } from "./world.js";

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
      const progress = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} worker ${process.pid}: ${line}\n`);
      const { outcomes, rest } = await runWorld(m.seeds, { verbose, progress });
      for (const outcome of outcomes) send({ kind: "outcome", outcome });
      send({ kind: "finished", rest });
    } catch (e) {
      const seed = m.seeds[0] as number;
      const error = `campaign error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`;
      send({ kind: "outcome", outcome: { seed, schedule: describeSchedule(scheduleFor(seed)), faults: {}, ops: {}, violations: [error], notes: [], ms: 0, world: [seed] } });
      send({ kind: "finished", rest: m.seeds.slice(1) });
    }
  })();
});
send({ kind: "ready" });
