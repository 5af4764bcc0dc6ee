/** Running the built `berth` for the CLI tests: in a temp berth home, through pipes or inside a real pseudo-terminal. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { builtPath } from "../support/built.js";
import { runNode } from "../support/process.js";

/**
 * The installed `berth` (package.json `bin`): after the package build (scripts/test → scripts/prepack) it runs the CLI
 * bundle (scripts/bundle-cli), so these tests judge what people run; after a bare `tsc`, main.js (test/cli/bundle.test.ts).
 */
const berthBin = () => builtPath("src/cli/entry/berth.cjs");

/** The escape character that starts every ANSI colour and cursor sequence. */
export const ESC = "\u001b[";

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const homes: string[] = [];

export function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "berth-cli-"));
  homes.push(home);
  return home;
}

export function removeHomes(): void {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
}

// Colour and terminal settings of the machine running the tests must not leak into what is being checked.
const NEUTRAL = { NO_COLOR: "", TERM: "xterm-256color", KUBECONFIG: "/nonexistent/berth-cli-test-kubeconfig" };

/** `berth ARGS` with stdout and stderr on pipes (not a terminal). */
export function berth(home: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return runNode([berthBin(), ...args], { env: { ...NEUTRAL, BERTH_HOME: home, ...env } });
}

/** Asserts stdout is exactly one JSON document on one line and returns it. */
export function oneDocument(r: Run, what: string): Record<string, unknown> {
  const lines = r.stdout.split("\n").filter((l) => l !== "");
  expect(
    lines,
    `${what}: one line on stdout, got ${JSON.stringify(r.stdout.slice(0, 300))} (stderr ${r.stderr.slice(0, 300)})`,
  ).toHaveLength(1);
  expect(r.stdout.includes(ESC), `${what}: no colour in --json`).toBe(false);
  const doc = JSON.parse(lines[0] as string) as unknown;
  expect(typeof doc, `${what}: a JSON object or array`).toBe("object");
  return doc as Record<string, unknown>;
}

/** Whether a program is on PATH (for the shells and `script` some tests need). */
export function onPath(program: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${program}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * `berth ARGS` inside a pseudo-terminal (util-linux `script`), 100 columns wide like a real terminal window; stdout
 * and stderr arrive together, as a person would see them.
 */
export function berthInTerminal(home: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const command = `stty cols 100 rows 30; exec ${quote(process.execPath)} ${[berthBin(), ...args].map(quote).join(" ")}`;
  return runNode(["-e", SCRIPT_RUNNER, command], { env: { ...NEUTRAL, BERTH_HOME: home, ...env } });
}

// `script` copies its stdin to the terminal; a closed stdin (not the test runner's) lets it end with the child.
const SCRIPT_RUNNER = `
const { spawnSync } = require("node:child_process");
const r = spawnSync("script", ["-qec", process.argv[1], "/dev/null"], { stdio: ["ignore", "inherit", "inherit"] });
process.exit(r.status ?? 1);
`;
