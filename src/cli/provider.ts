/**
 * `berth provider kubernetes` (Buzz's provider protocol, spec/kubernetes.md §3) and `berth provider install`, which
 * writes the self-contained bundle (scripts/bundle-provider) where Buzz Desktop discovers it (§20 P-1). The protocol
 * command takes its arguments raw: anything but none is answered A1 by the protocol itself, so commander must not
 * interpret them (no help, no unknown-option errors on stdout).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
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
    .enablePositionalOptions()
    .description("act as a backend provider for Buzz Desktop (one JSON request on stdin, one JSON line out)");
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
    .description("write ~/.local/bin/buzz-backend-berth, the self-contained provider Buzz Desktop discovers on PATH")
    .option("--dir <dir>", "where to write it", join(homedir(), ".local", "bin"))
    .option("--json", "print one JSON document")
    .action((opts: { dir: string; json?: boolean }) => {
      const bundle = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "buzz-backend-berth.mjs");
      if (!existsSync(bundle))
        throw new CliError(`${bundle} is missing; build it first (node scripts/bundle-provider/build.mjs)`);
      const target = join(opts.dir, "buzz-backend-berth");
      mkdirSync(opts.dir, { recursive: true });
      // One file, nothing beside it (Buzz stages provider sidecars alone, P-1). The shebang names this node by its
      // absolute path: GUI callers have a minimal PATH, and the embedded SQLite addon matches this node's ABI.
      const text = readFileSync(bundle, "utf8").replace(/^#![^\n]*\n/, "");
      const partial = `${target}.${process.pid}.tmp`;
      writeFileSync(partial, `#!${process.execPath}\n${text}`, { mode: 0o755 });
      chmodSync(partial, 0o755);
      renameSync(partial, target);
      answer(
        opts.json,
        { provider: target, node: process.execPath },
        `wrote ${target} (runs with ${process.execPath})`,
      );
    });
}
