/**
 * issue 12's reproductions, as filed, against a real `berth serve` process: the encoded spellings and the
 * absolute-form target that answered 200 without a token, the POST that added a node at tier pinned, the cross-site
 * text/plain POST and the rebinding Host. Each is refused; then the server is stopped and `berth audit export` (the
 * CLI, from outside) shows the controller chain holds no call and no peer for any of them.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAIN, requireBuild } from "../mesh/harness.js";
import { killAll, runNode, spawnNode } from "../support/process.js";
import { rawRequest } from "./api-listener.js";

const dirs: string[] = [];
afterEach(() => {
  killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("berth serve under the filed attacks", { timeout: 60_000 }, () => {
  it("refuses each one, and the exported chain holds nothing for them", async () => {
    requireBuild();
    const dir = mkdtempSync(join(tmpdir(), "berth-hostile-serve-"));
    dirs.push(dir);
    const serve = spawnNode([MAIN, "serve", "--port", "0", "--data-dir", dir, "--json"]);
    await serve.waitForOutput(/\n/);
    const port = Number(new URL((JSON.parse(serve.output().split("\n")[0] as string) as { url: string }).url).port);
    const host = `127.0.0.1:${port}`;
    const token = readFileSync(join(dir, "api.token"), "utf8").trim();
    const addNode = JSON.stringify({ addr: "127.0.0.1:1", tier: "pinned" });

    const attacks: Array<[string, string, number]> = [
      [`GET /%61pi/v1/nodes HTTP/1.1\nHost: ${host}`, "", 400],
      [`GET /ap%69/v1/nodes HTTP/1.1\nHost: ${host}`, "", 400],
      [`GET /api/%761/nodes HTTP/1.1\nHost: ${host}`, "", 400],
      [`GET http://x/api/v1/nodes HTTP/1.1\nHost: ${host}`, "", 400],
      [`POST /%61pi/v1/nodes HTTP/1.1\nHost: ${host}\nContent-Type: text/plain`, addNode, 400],
      [`POST /%61pi/v1/unsettled/settle HTTP/1.1\nHost: ${host}\nContent-Type: text/plain`, "{}", 400],
      [
        `POST /api/v1/nodes HTTP/1.1\nHost: ${host}\nOrigin: http://evil.example\nContent-Type: text/plain`,
        addNode,
        401,
      ],
      [`GET /api/v1/nodes HTTP/1.1\nHost: rebound.evil.example:${port}\nAuthorization: Bearer ${token}`, "", 421],
      [
        `GET /api/v1/nodes HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`,
        "",
        401,
      ],
    ];
    for (const [head, body, status] of attacks) {
      const a = await rawRequest(port, head, body);
      expect(a.status, `${head.split("\n")[0]}: ${a.body}`).toBe(status);
    }
    serve.child.kill("SIGTERM");
    expect((await serve.exited()).code).toBe(0);

    const exported = await runNode([MAIN, "audit", "export", "--db", join(dir, "controller.db")]);
    expect(exported.code, exported.stderr).toBe(0);
    const kinds = exported.stdout
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { kind: string }).kind);
    expect(kinds, "only what the server writes for itself").toEqual(["chain.genesis"]);
  });
});
