/** Integration tiers run berth's compiled output as real OS processes; the test command builds it first. */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/dist\/$/, "/");

export function builtPath(relative: string): string {
  const path = `${repoRoot}dist/${relative}`;
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: build first with \`npx tsc -p .\` (bash scripts/test does this)`);
  }
  return path;
}

export const berthBin = () => builtPath("src/cli/entry/main.js");
