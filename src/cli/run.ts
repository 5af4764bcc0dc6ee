/**
 * Runs one command line through a command tree: parsing, the answer to `--help`, and a failure's message and exit
 * code, the same whichever tree answers it. `berth` builds the whole tree (program.ts); `berth node serve` builds only
 * its own (node-serve.ts), so the long-running daemon never loads the other verbs (issue 19: memory).
 */
import type { Command } from "commander";

export async function runCli(argv: readonly string[], buildProgram: () => Promise<Command>): Promise<void> {
  const [
    { CommanderError },
    { explainFailure, failureDocument },
    { failureText, outputRequested },
    program,
    { stderrPalette },
  ] = await Promise.all([
    import("commander"),
    import("./errors.js"),
    import("./output.js"),
    buildProgram(),
    import("./style.js"),
  ]);
  const format = outputRequested(argv);
  const machine = format === "json" || format === "yaml";

  // `berth … | head` closes the pipe early: the reader has what it wanted, so that ends the command quietly.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });

  try {
    await program.parseAsync(process.argv);
  } catch (error: unknown) {
    // --help and --version end parsing through the same path; they are answers, not failures.
    if (error instanceof CommanderError && ["commander.helpDisplayed", "commander.version"].includes(error.code)) {
      process.exitCode = error.exitCode;
      return;
    }
    const failure = explainFailure(error);
    if (machine) process.stdout.write(failureText(format, failureDocument(failure)));
    // commander has already said what was wrong with the command line, on stderr.
    if (!(error instanceof CommanderError))
      process.stderr.write(`${stderrPalette(machine).red("berth:")} ${failure.message}\n`);
    if (process.env.BERTH_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exitCode = failure.exitCode;
  }
}
