import { readFileSync } from "node:fs";

/** The package version, read from package.json next to dist/ or src/. */
export function berthVersion(): string {
  for (const rel of ["../../../package.json", "../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "berth" && pkg.version) return pkg.version;
    } catch {
      // try the next layout
    }
  }
  return "0.0.0";
}
