#!/usr/bin/env node
/**
 * The `berth` executable: wires verb groups together; every decision lives in core/ and every effect in a shell.
 *
 * Start-up is kept near `node -e 0` (issue 19): `berth --version` answers before anything else is loaded, and the
 * command tree is built from registration files that load a verb's libraries only when that verb runs.
 */
import { berthVersion } from "../version.js";

const argv = process.argv.slice(2);

if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  process.stdout.write(`${berthVersion()}\n`);
} else {
  await run();
}

async function run(): Promise<void> {
  const [{ CommanderError }, { explainFailure, failureDocument }, { failureText, outputRequested }, { buildProgram }, { stderrPalette }] = await Promise.all([
    import("commander"),
    import("./errors.js"),
    import("./output.js"),
    import("./program.js"),
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
    await buildProgram().parseAsync(process.argv);
  } catch (error: unknown) {
    // --help and --version end parsing through the same path; they are answers, not failures.
    if (error instanceof CommanderError && ["commander.helpDisplayed", "commander.version"].includes(error.code)) {
      process.exitCode = error.exitCode;
      return;
    }
    const failure = explainFailure(error);
    if (machine) process.stdout.write(failureText(format, failureDocument(failure)));
    // commander has already said what was wrong with the command line, on stderr.
    if (!(error instanceof CommanderError)) process.stderr.write(`${stderrPalette(machine).red("berth:")} ${failure.message}\n`);
    if (process.env.BERTH_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exitCode = failure.exitCode;
  }
}
