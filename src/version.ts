import { readFileSync } from "node:fs";

/**
 * berth's version, read from its package.json: next to src/ when run from the sources, one level further up when run
 * from dist/. Found by the `berth` bin the file declares, not by the package name, so a renamed package still knows
 * its version. It sits below the CLI and the server, which both print it.
 */
export function berthVersion(): string {
  for (const rel of ["../../package.json", "../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8")) as {
        version?: string;
        bin?: Record<string, string>;
      };
      if (pkg.bin && "berth" in pkg.bin && pkg.version) return pkg.version;
    } catch {
      // try the next layout
    }
  }
  return "0.0.0";
}
