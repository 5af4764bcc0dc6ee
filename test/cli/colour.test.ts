/**
 * Colour and spinners are for a person at a terminal: on in a real pseudo-terminal, off on a pipe, off with
 * NO_COLOR, off with --json. The terminal cases run berth under util-linux `script`.
 */
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { berth, berthInTerminal, ESC, onPath, removeHomes, tempHome } from "./support.js";

let home: string;
let silent: Server;
let silentAddr: string;

beforeAll(async () => {
  home = tempHome();
  expect((await berth(home, ["keys", "new"])).code).toBe(0);
  // A "node" that accepts the connection and never answers, then hangs up: a wait long enough to show progress.
  silent = createServer((socket) => {
    setTimeout(() => socket.destroy(), 2500);
  });
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const address = silent.address();
  silentAddr = `127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});
afterAll(async () => {
  await new Promise((resolve) => silent.close(resolve));
  removeHomes();
});

const terminal = onPath("script") || Boolean(process.env.CI);

describe("colour", () => {
  it("is off when the output is a pipe", async () => {
    const help = await berth(home, ["--help"]);
    const error = await berth(home, ["agent", "status", "nobody"]);
    expect(help.stdout).toContain("Agents:");
    expect(error.stderr).toContain("berth:");
    expect(help.stdout.includes(ESC) || error.stderr.includes(ESC)).toBe(false);
  });

  it.skipIf(!terminal)("is on in a terminal: bold help titles, a red error prefix", async () => {
    const help = await berthInTerminal(home, ["--help"]);
    expect(help.stdout).toContain(`${ESC}1mAgents:`);
    const error = await berthInTerminal(home, ["agent", "status", "nobody"]);
    expect(error.code).toBe(1);
    expect(error.stdout).toContain(`${ESC}31mberth:`);
  });

  it.skipIf(!terminal)("is off in a terminal when NO_COLOR is set", async () => {
    const help = await berthInTerminal(home, ["--help"], { NO_COLOR: "1" });
    expect(help.stdout).toContain("Agents:");
    expect(help.stdout.includes(ESC)).toBe(false);
  });

  it.skipIf(!terminal)("is off in a terminal with --json, and the document is still one line", async () => {
    const r = await berthInTerminal(home, ["agent", "status", "nobody", "--json"]);
    expect(r.code).toBe(1);
    expect(r.stdout.includes(ESC)).toBe(false);
    expect(JSON.parse(r.stdout.split(/\r?\n/)[0] as string)).toMatchObject({ ok: false, kind: "unknown_agent" });
  });
});

describe("progress while waiting", () => {
  it.skipIf(!terminal)(
    "a terminal shows a spinner naming what berth waits for; a pipe and --json show nothing",
    async () => {
      const waiting = `asking ${silentAddr} to describe itself`;
      const [tty, pipe, json] = await Promise.all([
        berthInTerminal(home, ["nodes", "add", silentAddr]),
        berth(home, ["nodes", "add", silentAddr]),
        berthInTerminal(home, ["nodes", "add", silentAddr, "--json"]),
      ]);
      for (const r of [tty, pipe, json]) expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(tty.stdout).toContain(waiting);
      expect(tty.stdout).toContain(`${ESC}?25l`); // the spinner hides the cursor while it turns…
      expect(tty.stdout).toContain(`${ESC}?25h`); // …and gives it back
      expect(pipe.stdout + pipe.stderr).not.toContain(waiting);
      expect(json.stdout).not.toContain(waiting);
      expect(json.stdout.includes(ESC)).toBe(false);
    },
  );
});
