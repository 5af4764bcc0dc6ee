/**
 * `berth up --log-format` (issue 36): the node daemons berth up starts follow it, judged from their own log files
 * (`<home>/up/nodes/<node>/daemon.log`): `text` gives one human line per diagnostic and no pino JSON, `json` pino's
 * JSON lines. (The daemons' listening line on stdout is a JSON document either way: berth up reads it.) A format berth
 * does not know is refused before anything starts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { berthBin } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { processesUnder } from "../support/processes-under.js";

const homes: string[] = [];
afterEach(() => killAll());
afterAll(() => {
  for (const home of homes) {
    for (const pid of processesUnder(home)) process.kill(pid, "SIGKILL");
    rmSync(home, { recursive: true, force: true });
  }
});

async function upDetached(format: string): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), `berth-up-log-${format}-`));
  homes.push(home);
  const env = { BERTH_HOME: home };
  const upped = await runNode(
    [berthBin(), "up", "--detach", "--no-kubernetes", "--log-format", format, "--data-dir", home],
    { env },
  );
  expect(upped.code, upped.stderr).toBe(0);
  const down = await runNode([berthBin(), "down", "--data-dir", home], { env });
  expect(down.code, down.stderr).toBe(0);
  return home;
}

/** Every node's daemon.log, but the listening line (stdout's one JSON document). */
function daemonLogLines(home: string): string[] {
  const nodes = join(home, "up", "nodes");
  const names = readdirSync(nodes);
  expect(names.sort()).toEqual(["homelab", "pi-garage", "pi-kitchen"]);
  return names.flatMap((name) =>
    readFileSync(join(nodes, name, "daemon.log"), "utf8")
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith('{"event":"listening"')),
  );
}

describe("berth up --log-format", () => {
  it("text: the node daemons it starts write one human line per diagnostic, no JSON", async () => {
    const lines = daemonLogLines(await upDetached("text"));
    expect(
      lines.some((line) => /^\d\d:\d\d:\d\d INFO +containment probed/.test(line)),
      lines.join("\n"),
    ).toBe(true);
    expect(lines.filter((line) => line.startsWith("{"))).toEqual([]);
  }, 300_000);

  it("json: the node daemons it starts write pino's JSON lines", async () => {
    const lines = daemonLogLines(await upDetached("json"));
    const probed = lines.filter((line) => line.includes('"msg":"containment probed"'));
    expect(probed.length, lines.join("\n")).toBe(3);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
  }, 300_000);

  it("refuses a format it does not know, starting nothing", async () => {
    const home = mkdtempSync(join(tmpdir(), "berth-up-log-bad-"));
    homes.push(home);
    const r = await runNode([berthBin(), "up", "--log-format", "pretty", "--data-dir", home], {
      env: { BERTH_HOME: home },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--log-format: "pretty" must be "text" or "json"');
    expect(processesUnder(home)).toEqual([]);
  });
});
