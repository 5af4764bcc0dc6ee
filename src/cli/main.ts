#!/usr/bin/env node
/** The `berth` executable: wires verb groups together; every decision lives in core/ and every effect in a shell. */
import { CliError } from "./errors.js";
import { buildProgram } from "./program.js";

buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`berth: ${message}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : 2;
  });
