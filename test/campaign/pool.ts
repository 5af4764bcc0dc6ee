/**
 * `--parallel N` across processes: N worker processes (worker.ts), each running one world at a time, so the worlds'
 * proxies (TLS on both sides of every connection) and /proc samplers are spread over the machine's cores instead of
 * sharing one event loop. The parent keeps the queue of chunks (consecutive seeds, `worldSize` each); a worker asks
 * for the next, runs it, and sends back its outcomes and the seeds it did not run (a world that found a violation is
 * closed; the rest of its chunk goes back to the head of the queue). A SIGINT/SIGTERM to the parent is passed on, and
 * each worker tears its world down before it exits.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Outcome } from "./run.js";

export type ToWorker = { readonly kind: "chunk"; readonly seeds: number[] } | { readonly kind: "done" };
export type FromWorker =
  | { readonly kind: "ready" }
  | { readonly kind: "outcome"; readonly outcome: Outcome }
  | { readonly kind: "finished"; readonly rest: number[] };

export async function runSeedsInWorkers(
  seeds: readonly number[],
  parallel: number,
  each: (o: Outcome) => void,
  opts: { verbose?: boolean; worldSize: number },
): Promise<Outcome[]> {
  const queue: number[][] = [];
  for (let i = 0; i < seeds.length; i += opts.worldSize) queue.push(seeds.slice(i, i + opts.worldSize));
  const outcomes: Outcome[] = [];
  const script = fileURLToPath(new URL("./worker.js", import.meta.url));
  const children = Array.from({ length: Math.min(parallel, queue.length) }, () =>
    fork(script, opts.verbose ? ["--verbose"] : [], { stdio: ["ignore", "inherit", "inherit", "ipc"] }),
  );
  const forward = (signal: NodeJS.Signals) => {
    for (const c of children) c.kill(signal);
  };
  process.once("SIGINT", forward);
  process.once("SIGTERM", forward);
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          const next = () => {
            const chunk = queue.shift();
            child.send(
              chunk ? ({ kind: "chunk", seeds: chunk } satisfies ToWorker) : ({ kind: "done" } satisfies ToWorker),
            );
          };
          child.on("message", (m: FromWorker) => {
            if (m.kind === "outcome") {
              outcomes.push(m.outcome);
              each(m.outcome);
            } else if (m.kind === "finished") {
              if (m.rest.length > 0) queue.unshift(m.rest);
              next();
            } else next();
          });
          child.on("exit", () => resolve());
        }),
    ),
  );
  process.removeListener("SIGINT", forward);
  process.removeListener("SIGTERM", forward);
  return outcomes.sort((a, b) => a.seed - b.seed);
}
