/**
 * Flags shared by many verbs, spelled once (issue 13, "one spelling for the same flag everywhere"):
 *   --data-dir DIR     the berth home (every verb; `--db FILE` stays a hidden alias on the audit verbs)
 *   --kube-context C   the kubeconfig context (`--context` stays a hidden alias on the agent and k8s verbs)
 *   -n, --tail N       the last N lines (logs) or events (audit tail); `--tail-bytes`, `--lines` stay hidden aliases
 *   --local            this machine's files even when a context or a running `berth serve` would be used
 *   --watch            list verbs: print again whenever the answer changes, until Ctrl-C
 *   --database URL     the controller's store (issue 20): postgres://… or sqlite:PATH; default $BERTH_DATABASE_URL,
 *                      else controller.db in the home (database.ts checks it when the verb runs)
 * Only commander here: registration must stay light (issue 19).
 */
import { type Command, Option } from "commander";
import type { BackendFlags } from "./backends/types.js";
import { CliError, invalidInput } from "./errors.js";
import { berthHome, defaultPaths } from "./paths.js";

export interface ControllerVerbFlags {
  readonly dataDir?: string;
  readonly database?: string;
  readonly keyFile?: string;
  readonly local?: boolean;
  readonly kubeContext?: string;
  /** Hidden alias of --kube-context. */
  readonly context?: string;
  readonly json?: boolean;
}

export const DATABASE_HELP =
  "the controller's store: postgres://USER@HOST:PORT/DB (the password from PGPASSFILE or ~/.pgpass; never on the command line), @FILE (a 0600 file holding the address), or sqlite:PATH (default: $BERTH_DATABASE_URL, which may hold a password, else controller.db in the home)";

/** `--database`, for every verb that opens the controller's store (and `berth serve`, `berth up`). */
export function databaseFlag(cmd: Command): Command {
  return cmd.option("--database <url>", DATABASE_HELP);
}

/** --data-dir, --database, --key-file, --local and --json, for every verb that talks to the controller. */
export function controllerFlags(
  cmd: Command,
  homeWhat = "berth home (controller.db, keys/, peers.json, packages/ …)",
): Command {
  return databaseFlag(cmd)
    .option("--data-dir <dir>", homeWhat, berthHome())
    .option("--key-file <path>", "the controller's identity key (local files only)", defaultPaths.controllerKey())
    .option("--local", "use this machine's files, not the current context or the `berth serve` running on this home")
    .option("--json", "print one JSON document");
}

/** --kube-context, with the old --context kept working but out of help. */
export function kubeContextFlag(
  cmd: Command,
  what = "kubeconfig context for Kubernetes agents (default: provider_config.context, else current)",
): Command {
  return cmd
    .option("--kube-context <ctx>", what)
    .addOption(new Option("--context <ctx>", "alias of --kube-context").hideHelp());
}

export function watchFlags(cmd: Command): Command {
  return cmd
    .option("-w, --watch", "print again whenever the answer changes, until Ctrl-C")
    .option("--interval <seconds>", "--watch: how often to ask", "2");
}

/** What the backend needs from a verb's flags; a home typed on the command line means this machine's home. */
export function backendFlags(opts: ControllerVerbFlags, cmd: Command): BackendFlags {
  const kube = opts.kubeContext ?? opts.context;
  return {
    ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
    ...(opts.keyFile ? { keyFile: opts.keyFile } : {}),
    ...(opts.database ? { database: opts.database } : {}),
    ...(kube ? { kubeContext: kube } : {}),
    local: opts.local === true,
    explicitHome: cmd.getOptionValueSource("dataDir") === "cli",
    json: opts.json === true,
  };
}

/** A whole number within bounds, or a usage error naming the flag. */
export function integerFlag(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new CliError(`${flag}: ${JSON.stringify(value)} must be an integer ${min}…${max}`);
  return n;
}

/** A flag whose value is one of a few words, refused in zod's words (the message names the flag and the choices). */
export function oneOf<T extends string>(flag: string, value: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(value))
    throw invalidInput(
      `${flag}: value: Invalid option: expected one of ${choices.map((c) => JSON.stringify(c)).join("|")}`,
    );
  return value as T;
}
