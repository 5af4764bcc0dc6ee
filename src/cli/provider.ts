/**
 * `berth provider kubernetes` (Buzz's provider protocol, spec/kubernetes.md §3) and `berth provider install` (the
 * discovery shim of §20 P-1). The protocol command takes its arguments raw: anything but none is answered A1 by the
 * protocol itself, so commander must not interpret them (no help, no unknown-option errors on stdout).
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { CliError } from "./errors.js";
import { answer } from "./output.js";
import { berthVersion } from "../version.js";

export function registerProviderCommands(program: Command): void {
  // Root options (`--version`) must not swallow the protocol's raw arguments: they count only before a subcommand.
  program.enablePositionalOptions();
  const provider = program
    .command("provider")
    .enablePositionalOptions().description("act as a backend provider for Buzz Desktop (one JSON request on stdin, one JSON line out)");
  provider
    .command("kubernetes")
    .description("the Kubernetes provider: `info` and `deploy` over stdin/stdout")
    .helpOption(false)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .passThroughOptions()
    .argument("[args...]")
    .action(async (_args: string[], _opts: unknown, cmd: Command) => {
      // Loaded on demand: `info` must answer fast, and the Kubernetes client is heavy.
      const { runProviderProcess } = await import("../kubernetes/provider-process.js");
      await runProviderProcess(cmd.args, berthVersion());
    });
  provider
    .command("install")
    .description("write ~/.local/bin/buzz-backend-berth, a shim with absolute paths Buzz Desktop discovers on PATH")
    .option("--dir <dir>", "where to write the shim", join(homedir(), ".local", "bin"))
    .option("--json", "print one JSON document")
    .action((opts: { dir: string; json?: boolean }) => {
      const entry = join(dirname(fileURLToPath(import.meta.url)), "buzz-backend.js");
      if (!existsSync(entry)) throw new CliError(`${entry} is missing; build berth first (npm run build)`);
      const shim = join(opts.dir, "buzz-backend-berth");
      mkdirSync(opts.dir, { recursive: true });
      // Absolute paths: GUI callers have a minimal PATH and may run a staged copy (P-1).
      writeFileSync(shim, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(entry)} "$@"\n`);
      chmodSync(shim, 0o755);
      answer(opts.json, { shim }, `wrote ${shim}`);
    });
}
