/**
 * Every failure the CLI reports passes through here: `explainFailure` turns what went wrong (a CliError a verb
 * raised, a usage error from commander, a key file, a zod schema, a socket, a file, SQLite) into one message that
 * says what happened and what to do next, a stable `kind` for programs, and the exit status.
 *
 * Exit status (also printed at the end of `berth --help`):
 *   0  done: the answer is yes, or the agent is where its spec wants it (or on its way)
 *   1  berth looked and the answer is no: a verify failed, a node or the cluster refused or did not answer,
 *      the agent or instance is unknown, a placement found no node
 *   2  the request could not be made: a bad flag or argument, an invalid or missing file, a key file that is
 *      missing or readable by others, a database that cannot be opened
 */
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import { CommanderError } from "commander";

export const EXIT_CODES_HELP = [
  "Exit status:",
  "  0  done: the answer is yes, or the agent is where its spec wants it (or on its way)",
  "  1  berth looked and the answer is no: a verify failed, a node or the cluster refused or did not answer,",
  "     the agent or instance is unknown, a placement found no node",
  "  2  the request could not be made: a bad flag or argument, an invalid or missing file, a key file that is",
  "     missing or readable by others, a database that cannot be opened",
  "",
  'With --json every verb prints one JSON document on stdout, failures included: {"ok":false,"error":…,"kind":…}.',
].join("\n");

/** Stable names for what went wrong, for programs reading --json. */
export type FailureKind =
  | "usage"
  | "validation"
  | "key_file"
  | "file"
  | "permission"
  | "database"
  | "unreachable"
  | "refused"
  | "unknown_agent"
  | "unknown_instance"
  | "chain_broken"
  | "unauthorized"
  | "internal";

/** CLI failures that carry their exit status: 1 for a negative answer (verify failed), 2 for usage or I/O. */
export class CliError extends Error {
  readonly kind: FailureKind;
  readonly details: Readonly<Record<string, unknown>>;
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 2,
    options: { kind?: FailureKind; details?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = "CliError";
    this.kind = options.kind ?? (exitCode === 1 ? "refused" : "usage");
    this.details = options.details ?? {};
  }
}

export interface Failure {
  readonly kind: FailureKind;
  readonly message: string;
  readonly exitCode: 1 | 2;
  readonly details: Readonly<Record<string, unknown>>;
}

/** Turns a zod error into one line that names the field, for flags and files alike. */
export function describeZodIssues(
  what: string,
  issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>,
): string {
  return issues
    .map((i) => `${what}: ${i.path.length ? `field ${i.path.map(String).join(".")}` : "value"}: ${i.message}`)
    .join("; ");
}

// ---- the common mistakes, named once ------------------------------------------------------------------------------

/** A flag, argument or file that failed its schema: the message names the field; this says what to do with it. */
export function invalidInput(message: string): CliError {
  return new CliError(`${message} (correct the named field and run the command again)`, 2, { kind: "validation" });
}

export function unknownAgent(name: string): CliError {
  return new CliError(
    `no agent ${JSON.stringify(name)} was deployed from this berth home; \`berth agents\` lists the ones that were, \`berth deploy FILE\` deploys one (another home: --data-dir or BERTH_HOME)`,
    1,
    { kind: "unknown_agent" },
  );
}

/**
 * Issue 36: a verb that reads a home that is not there makes none; it says where it looked, why there, and how to
 * start one (never "create a key"). `how` is why that directory: --data-dir, $BERTH_HOME or the default home.
 */
export function noHome(dataDir: string): CliError {
  const home = homedir();
  const how =
    process.env.BERTH_HOME && dataDir === resolve(process.env.BERTH_HOME)
      ? "$BERTH_HOME"
      : dataDir === resolve(home, ".berth")
        ? "the default home; $BERTH_HOME is not set"
        : "--data-dir";
  return new CliError(
    `no berth home at ${dataDir} (${how}): nothing to read, and nothing was made. Start one with \`berth up\`, or name the one you started with --data-dir DIR or BERTH_HOME=DIR`,
    1,
    {
      kind: "refused",
      details: { home: dataDir },
    },
  );
}

/** A home that is not there, or empty: nothing of berth's was ever written in it. */
export function homeMissing(dataDir: string): boolean {
  return !existsSync(dataDir) || readdirSync(dataDir).length === 0;
}

export function unknownInstance(id: string, reason: string): CliError {
  return new CliError(`${reason}; \`berth instances\` lists the placed instances (${id} is not one of them)`, 1, {
    kind: "unknown_instance",
  });
}

/** A node that did not answer: the next step is always to check that its daemon runs and the address is right. */
export function unreachableNode(what: string, reason: string): CliError {
  return new CliError(
    `${what}: the node did not answer (${reason}); check that \`berth node serve\` runs there and listens on that address, then \`berth nodes list --refresh\``,
    1,
    { kind: "unreachable" },
  );
}

/** A place refusal, in the same words whether the controller ran here or behind the API. */
export function placeRefused(
  code: string,
  message: string,
  constraints: ReadonlyArray<{ constraint: string; detail: string }>,
): CliError {
  const text = [
    `place refused (${code}): ${message}`,
    ...constraints.map((r) => `  ${r.constraint}: ${r.detail}`),
  ].join("\n");
  return new CliError(text.trimEnd(), 1, { details: { code, constraints } });
}

/**
 * Issue 36 item 5: a key that did not sign the chain is most often the wrong key given, not a broken chain: say so,
 * name the key that did sign it, and suggest nothing destructive.
 */
export function wrongKeyAdvice(signedBy: string): string {
  return `this is not the key that signed this chain (it was signed by ${signedBy}); you may have given another key: a package signer's key, another home's controller key, or a typo. \`berth keys show --key-file ~/.berth/keys/controller.key\` prints the controller's public key. Nothing about the chain was judged; if you are sure the key is right, the chain was replaced by one signed with another key: keep the database as evidence`;
}

/** What to do when the audit chain does not verify: never repair silently; find the cause, then reseal. */
export const CHAIN_BROKEN_ADVICE =
  "events from this one on cannot be trusted: keep the database as evidence, compare it with an export or a checkpoint held elsewhere, and once the cause is known start a new chain with `berth audit reseal --new-chain --reason TEXT`";

// ---- errors raised below the CLI ----------------------------------------------------------------------------------

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "ECONNRESET",
  "EAI_AGAIN",
  "ENOTFOUND",
]);

function errnoOf(error: unknown): { code: string; path?: string; address?: string; port?: number } | null {
  if (!(error instanceof Error)) return null;
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  return typeof e.code === "string"
    ? {
        code: e.code,
        ...(e.path ? { path: e.path } : {}),
        ...(e.address ? { address: e.address } : {}),
        ...(e.port ? { port: e.port } : {}),
      }
    : null;
}

const isNamed = (error: unknown, name: string): error is Error => error instanceof Error && error.name === name;

export function explainFailure(error: unknown): Failure {
  const none = {};
  if (error instanceof CliError)
    return { kind: error.kind, message: error.message, exitCode: error.exitCode, details: error.details };
  if (error instanceof CommanderError) {
    // commander already printed its message on stderr; this is the same text for --json and the exit status.
    return {
      kind: "usage",
      message: `${error.message.replace(/^error: /, "")} (run with --help for usage)`,
      exitCode: 2,
      details: none,
    };
  }
  // Recognised by name, not by class: importing zod, the key file and the store here would load them for every verb,
  // `--help` included (issue 19: start-up is mostly module loading).
  if (isNamed(error, "KeyFileError")) return { kind: "key_file", message: error.message, exitCode: 2, details: none };
  if (isNamed(error, "SchemaError")) return { kind: "database", message: error.message, exitCode: 2, details: none };
  if (
    typeof error === "object" &&
    error !== null &&
    (error as { name?: unknown }).name === "ZodError" &&
    Array.isArray((error as { issues?: unknown }).issues)
  ) {
    const e = invalidInput(
      describeZodIssues(
        "input",
        (error as unknown as { issues: Array<{ path: PropertyKey[]; message: string }> }).issues,
      ),
    );
    return { kind: e.kind, message: e.message, exitCode: e.exitCode, details: none };
  }
  const errno = errnoOf(error);
  if (errno && NETWORK_CODES.has(errno.code)) {
    const where = errno.address ? `${errno.address}${errno.port ? `:${errno.port}` : ""}` : "the node";
    const e = unreachableNode(where, errno.code);
    return { kind: e.kind, message: e.message, exitCode: e.exitCode, details: none };
  }
  if (errno && (errno.code === "EACCES" || errno.code === "EPERM")) {
    return {
      kind: "permission",
      message: `permission denied on ${errno.path ?? "a file berth needs"}; run berth as the user who owns it, or fix its owner and mode`,
      exitCode: 2,
      details: none,
    };
  }
  if (errno && errno.code === "ENOENT") {
    return {
      kind: "file",
      message: `${errno.path ?? "a file berth needs"} does not exist, or its folder does not; check the path (relative paths start from the current directory)`,
      exitCode: 2,
      details: none,
    };
  }
  if (errno?.code.startsWith("SQLITE_")) {
    const busy = errno.code === "SQLITE_BUSY" || errno.code === "SQLITE_LOCKED";
    return {
      kind: "database",
      message: busy
        ? "another berth process is writing this database right now; wait for it to finish and try again"
        : `the database could not be used (${errno.code}): ${error instanceof Error ? error.message : String(error)}; check the path given with --db or --data-dir`,
      exitCode: 2,
      details: none,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    kind: "internal",
    message: `${message} (unexpected; set BERTH_DEBUG=1 to see where it came from)`,
    exitCode: 2,
    details: none,
  };
}

/** The JSON document of a failure: the same shape from every verb. */
export function failureDocument(f: Failure): Record<string, unknown> {
  return { ok: false, error: f.message, kind: f.kind, ...f.details };
}
