/** Finding stray processes a test started: the promise "Ctrl-C leaves no process" is checked against /proc. */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Every process whose command line or working directory lies inside `dir`: daemons and agent instances alike. */
export function processesUnder(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      let cwd = "";
      try {
        cwd = readlinkSync(`/proc/${entry}/cwd`);
      } catch {
        // a process we may not inspect is not ours
      }
      if (cmdline.includes(dir) || cwd.startsWith(dir)) found.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}
