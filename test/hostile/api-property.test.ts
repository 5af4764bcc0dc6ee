/**
 * issue 12, the hostile tier's property: whatever path, method, Host, Content-Type, Authorization and body a caller
 * without the token sends to a real listener, no handler runs — no private route answers 2xx, no handler is entered
 * (each is wrapped to record it), and the controller's chain (read-only, from outside) does not move. Paths are real
 * routes re-spelled: percent escapes of any character, case, absolute-form, dot segments, doubled or trailing
 * slashes, `;` parameters, queries and fragments carrying the token; credentials are near misses of the token.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/server/app.js";
import { ROUTES } from "../../src/server/contract.js";
import type { Handlers } from "../../src/server/handler.js";
import { API_BASE } from "../../src/server/openapi.js";
import { HANDLERS } from "../../src/server/server.js";
import { openServerState, type ServerState } from "../../src/server/state.js";
import { loadOrCreateToken } from "../../src/server/token.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { notConfigured } from "../server/support.js";
import { rawRequest } from "./api-listener.js";

let dir: string;
let token: string;
let state: ServerState;
let app: FastifyInstance;
let port: number;
const reached: string[] = [];

function chainSeqs(): number[] {
  const db = openDatabase(join(dir, "controller.db"), { readonly: true });
  try {
    return (db.prepare("SELECT seq FROM audit_event ORDER BY seq").all() as Array<{ seq: number }>).map((r) => r.seq);
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "berth-hostile-prop-"));
  token = loadOrCreateToken(dir);
  state = await openServerState({ dataDir: dir, version: "test", kubernetes: notConfigured });
  const spied: Handlers = Object.fromEntries(
    Object.entries(HANDLERS).map(([id, handler]) => [
      id,
      (input: Parameters<typeof handler>[0], ctx: Parameters<typeof handler>[1]) => {
        reached.push(id);
        return handler(input, ctx);
      },
    ]),
  );
  ({ app } = buildApp({ state, token, webRoot: join(dir, "no-web"), handlers: spied, logLevel: "silent" }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  port = (app.server.address() as { port: number }).port;
});
afterAll(async () => {
  await app.close();
  await state.close();
  rmSync(dir, { recursive: true, force: true });
});

const routePaths = ROUTES.map(
  (r) => `${API_BASE}${r.path.replace("{decision_id}", "ab".repeat(32)).replace(/\{[a-z_]+\}/g, "x1")}`,
);
const paths = [...routePaths, "/metrics", "/healthz", "/readyz", "/"];

const percentEscape = (c: string) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`;

/** A real path, re-spelled by one or more of the tricks an attacker has. */
const respelled = fc
  .tuple(
    fc.constantFrom(...paths),
    fc.array(fc.nat(), { maxLength: 4 }),
    fc.boolean(),
    fc.constantFrom("", "/", "//", "/.", "/..", ";x", "%2f", "?x=1", "#frag", `?token=${"T"}`, "%00", ".json"),
    fc.constantFrom(
      "",
      "http://127.0.0.1",
      "http://evil.example",
      "https://x:1",
      "//",
      "/./",
      "/x/..",
      "*",
      "HTTP://A",
    ),
    fc.boolean(),
  )
  .map(([path, positions, upper, suffix, prefix, lowerHex]) => {
    let p = path;
    for (const n of positions) {
      const i = n % p.length;
      const e = percentEscape(p[i] as string);
      p = `${p.slice(0, i)}${lowerHex ? e : e.toUpperCase()}${p.slice(i + 1)}`;
    }
    if (upper) p = p.replace(/api/, "API");
    return `${prefix}${p}${suffix}`;
  });
const anyTarget = fc.oneof(
  respelled,
  fc.stringMatching(/^[!-~]{0,60}$/).filter((s) => !s.includes(" ")),
);

/** Credentials that are not the token: none, near misses, the token somewhere it does not count. */
const credentials = fc.constantFrom<(t: string) => string>(
  () => "",
  (t) => `Authorization: Bearer ${t.slice(0, -1)}${t.endsWith("A") ? "B" : "A"}\n`,
  (t) => `Authorization: Bearer ${t.slice(1)}\n`,
  (t) => `Authorization: Bearer ${t}x\n`,
  (t) => `Authorization: Basic ${Buffer.from(`berth:${t}`).toString("base64")}\n`,
  (t) => `Authorization: Token ${t}\n`,
  (t) => `Cookie: token=${t}\n`,
  (t) => `X-Berth-Token: ${t}\n`,
  () => "Authorization: Bearer \n",
  () => "Authorization: Bearer a b\n",
);

describe("no request without the token reaches a handler", { timeout: 240_000 }, () => {
  it("whatever the target, method, Host, Content-Type, credentials and body", async () => {
    const before = chainSeqs();
    await fc.assert(
      fc.asyncProperty(
        anyTarget,
        fc.constantFrom("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"),
        fc.constantFrom(
          `127.0.0.1:${port}`,
          `localhost:${port}`,
          "evil.example",
          `evil.example:${port}`,
          `127.0.0.1:${port}.evil.example`,
        ),
        fc.constantFrom(
          "",
          "application/json",
          "text/plain",
          "application/x-www-form-urlencoded",
          "application/json; charset=utf-8",
        ),
        credentials,
        fc.oneof(
          fc.constant(""),
          fc.constant('{"addr":"127.0.0.1:1","tier":"pinned"}'),
          fc.jsonValue().map((v) => JSON.stringify(v) ?? ""),
        ),
        async (target, method, host, type, credential, body) => {
          reached.length = 0;
          const withToken = target.replace("T", token);
          const head = `${method} ${withToken} HTTP/1.1\nHost: ${host}\n${credential(token)}${type ? `Content-Type: ${type}\n` : ""}`;
          const a = await rawRequest(port, head, method === "GET" || method === "HEAD" ? "" : body);
          const what = `${head.replace(token, "<token>")} → ${a.status} ${a.body.slice(0, 120)}`;
          expect(reached, what).toEqual([]);
          if (a.status >= 200 && a.status < 300) {
            // Only the public answers: health, the OpenAPI document, the probes, the dashboard's page.
            // A HEAD has no body to judge: its private GETs run their (spied) handler; the two that do not are the
            // metrics and the event stream, told apart by their type.
            const type = a.headers["content-type"] ?? "";
            expect(type, what).not.toMatch(/version=0\.0\.4|event-stream/);
            const ok =
              a.json.ok === true ||
              a.json.openapi === "3.1.0" ||
              typeof a.json.ready === "boolean" ||
              type.startsWith("text/html") ||
              method === "HEAD";
            expect(ok, what).toBe(true);
            expect(a.body, what).not.toMatch(/berth_api_request|"nodes"|"placements"|"events"/);
          }
          expect(a.body, what).not.toContain(token);
        },
      ),
      { numRuns: 400 },
    );
    expect(chainSeqs(), "the chain did not move").toEqual(before);
  });

  it("a request with the token does reach its handler (the spy and the listener are live)", async () => {
    reached.length = 0;
    const a = await rawRequest(
      port,
      `POST ${API_BASE}/unsettled/settle HTTP/1.1\nHost: 127.0.0.1:${port}\nAuthorization: Bearer ${token}\nContent-Type: application/json`,
      "{}",
    );
    expect(a.status).toBe(200);
    expect(reached).toEqual(["settle"]);
  });
});
