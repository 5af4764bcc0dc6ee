#!/usr/bin/env node
/** The `berth` executable: wires verb groups together; every decision lives in core/ and every effect in a shell. */
import { CommanderError } from "commander";
import { explainFailure, failureDocument } from "./errors.js";
import { jsonRequested } from "./output.js";
import { buildProgram } from "./program.js";
import { stderrPalette } from "./style.js";

const json = jsonRequested(process.argv.slice(2));

// `berth … | head` closes the pipe early: the reader has what it wanted, so that ends the command quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    // --help and --version end parsing through the same path; they are answers, not failures.
    if (error instanceof CommanderError && ["commander.helpDisplayed", "commander.version"].includes(error.code)) {
      process.exitCode = error.exitCode;
      return;
    }
    const failure = explainFailure(error);
    if (json) process.stdout.write(`${JSON.stringify(failureDocument(failure))}\n`);
    // commander has already said what was wrong with the command line, on stderr.
    if (!(error instanceof CommanderError)) process.stderr.write(`${stderrPalette(json).red("berth:")} ${failure.message}\n`);
    if (process.env.BERTH_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exitCode = failure.exitCode;
  });
