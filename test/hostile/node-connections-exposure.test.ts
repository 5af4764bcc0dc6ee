/**
 * Issue 12: `berth node serve` on an address other machines can reach says so, on stderr and in its JSON line; on
 * loopback it says nothing. A real daemon on 0.0.0.0 and on 127.0.0.1.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isLoopbackHost } from "../../src/mesh/transport/tcp.js";
import { cleanup, MAIN, requireBuild, tempDir, waitFor } from "../mesh/harness.js";
import { killAll, spawnNode } from "../support/process.js";

afterAll(async () => {
  killAll();
  await cleanup();
});

async function serve(listen: string): Promise<{ line: Record<string, unknown>; stderr: string }> {
  const dataDir = join(tempDir(), "node");
  execFileSync(process.execPath, [MAIN, "node", "init", "--data-dir", dataDir, "--json"]);
  const p = spawnNode([MAIN, "node", "serve", "--listen", listen, "--data-dir", dataDir]);
  await p.waitForOutput(/"event":"listening".*\n/, 30_000);
  // stderr also carries the daemon's pino lines and its root-agents warning (issue 15): wait for the listen warning itself.
  if (!listen.startsWith("127."))
    await waitFor(() => p.errors().includes("reachable beyond this machine"), "the warning line", 30_000);
  const line = JSON.parse(p.output().split("\n")[0] as string) as Record<string, unknown>;
  p.child.kill("SIGKILL");
  await p.exited();
  return { line, stderr: p.errors() };
}

describe("node serve tells where it listens", () => {
  it("warns on stderr and in its JSON line when listening on 0.0.0.0", async () => {
    requireBuild();
    const wide = await serve("0.0.0.0:0");
    expect(wide.line.listening_beyond_machine).toBe(true);
    expect(wide.stderr).toContain(
      `warning: listening on ${wide.line.address as string}, reachable beyond this machine`,
    );
  }, 60_000);

  it("gives no reachability warning on loopback", async () => {
    const local = await serve("127.0.0.1:0");
    expect(local.line.listening_beyond_machine).toBe(false);
    expect(local.stderr).not.toContain("warning: listening on");
    expect(local.stderr).not.toContain("reachable beyond this machine");
  }, 60_000);

  it("counts 127.0.0.0/8, ::1 and localhost as loopback, and the wildcards and LAN addresses as beyond the machine", () => {
    for (const h of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"])
      expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "fe80::1", "example.com"])
      expect(isLoopbackHost(h), h).toBe(false);
  });
});
