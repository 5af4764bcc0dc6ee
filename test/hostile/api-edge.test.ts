/**
 * issue 12, Critical: the API's token check could be skipped by spelling the path differently, and a page in the
 * user's browser could drive it. Against a real listener, with raw sockets: every spelling, target form, Host and
 * media type an attacker has is refused with its status and code — with or without a token where the token does not
 * matter — and afterwards the controller's chain (read-only, from outside the server) holds nothing for any of them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostileTarget, type Target } from "./api-listener.js";

let t: Target;
let before: number[];
beforeAll(async () => {
  t = await hostileTarget();
  before = t.chain().map((e) => e.seq);
});
afterAll(async () => {
  await t.close();
});

const ADD_NODE = JSON.stringify({ addr: "127.0.0.1:1", tier: "pinned" });
const bearer = () => `Authorization: Bearer ${t.server.token}`;
/** A token of the right length and alphabet, one character off. */
const nearToken = () => `${t.server.token.slice(0, -1)}${t.server.token.endsWith("A") ? "B" : "A"}`;

const ENCODED = [
  "/%61pi/v1/nodes",
  "/ap%69/v1/nodes",
  "/api/%761/nodes",
  "/api/v1/node%73",
  "/%61%70%69/v1/unsettled/settle",
  "/api/v1/unsettled/%73ettle",
];

describe("the API refuses every other spelling of a route", () => {
  it.each(ENCODED)("GET %s is 400 non_canonical_path, with or without the token", async (path) => {
    for (const auth of ["", `${bearer()}\n`]) {
      const a = await t.raw(`GET ${path} HTTP/1.1\nHost: ${t.host}\n${auth}`);
      expect([a.status, a.json.error?.code], `${path} ${auth ? "with" : "without"} token: ${a.body}`).toEqual([
        400,
        "non_canonical_path",
      ]);
    }
  });

  it.each(ENCODED)("POST %s with a JSON body and no token changes nothing", async (path) => {
    const a = await t.raw(`POST ${path} HTTP/1.1\nHost: ${t.host}\nContent-Type: application/json`, ADD_NODE);
    expect([a.status, a.json.error?.code], a.body).toEqual([400, "non_canonical_path"]);
  });

  it("an absolute-form target is 400 bad_request_target, GET or POST, token or not", async () => {
    for (const [head, body] of [
      [`GET http://x/api/v1/nodes HTTP/1.1\nHost: ${t.host}`, ""],
      [`GET http://${t.host}/api/v1/nodes HTTP/1.1\nHost: ${t.host}\n${bearer()}`, ""],
      [`POST http://x/api/v1/nodes HTTP/1.1\nHost: ${t.host}\nContent-Type: application/json`, ADD_NODE],
    ] as const) {
      const a = await t.raw(head, body);
      expect([a.status, a.json.error?.code], `${head.split("\n")[0]}: ${a.body}`).toEqual([400, "bad_request_target"]);
    }
  });

  it("authority-form (CONNECT), asterisk-form and a fragment are 400 bad_request_target", async () => {
    for (const line of [`CONNECT ${t.host} HTTP/1.1`, "OPTIONS * HTTP/1.1", "GET /api/v1/nodes#x HTTP/1.1"]) {
      const a = await t.raw(`${line}\nHost: ${t.host}\n${bearer()}`);
      expect([a.status, a.json.error?.code], `${line}: ${a.body}`).toEqual([400, "bad_request_target"]);
    }
  });

  it("an undecodable escape is 400 non_canonical_path in the API's error shape", async () => {
    const a = await t.raw(`GET /api/v1/agents/%E0%A4%A HTTP/1.1\nHost: ${t.host}\n${bearer()}`);
    expect([a.status, a.json.error?.code], a.body).toEqual([400, "non_canonical_path"]);
  });
});

describe("a web page in the user's browser gets nothing", () => {
  it("a cross-site text/plain POST (no preflight) with a valid-looking body is 401 without the token and 415 with it", async () => {
    const origin = "Origin: http://evil.example\nReferer: http://evil.example/";
    const without = await t.raw(
      `POST /api/v1/nodes HTTP/1.1\nHost: ${t.host}\n${origin}\nContent-Type: text/plain;charset=UTF-8`,
      ADD_NODE,
    );
    expect([without.status, without.json.error?.code], without.body).toEqual([401, "unauthorized"]);
    // Even a request that carries the token is not executed from a body typed as anything but JSON.
    for (const type of [
      "text/plain;charset=UTF-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/jsonp",
    ]) {
      const a = await t.raw(
        `POST /api/v1/nodes HTTP/1.1\nHost: ${t.host}\n${bearer()}\nContent-Type: ${type}`,
        ADD_NODE,
      );
      expect([a.status, a.json.error?.code], `${type}: ${a.body}`).toEqual([415, "unsupported_media_type"]);
    }
    // The text/plain POST on an encoded spelling (the exploit) is refused before anything reads the body.
    const encoded = await t.raw(
      `POST /%61pi/v1/unsettled/settle HTTP/1.1\nHost: ${t.host}\n${origin}\nContent-Type: text/plain`,
      "{}",
    );
    expect(encoded.status, encoded.body).toBe(400);
  });

  it("a DNS-rebinding Host is 421 misdirected_host, even with the token", async () => {
    for (const host of [
      `evil.example:${t.port}`,
      "evil.example",
      `localhost.evil.example:${t.port}`,
      `127.0.0.1.nip.io:${t.port}`,
      `127.0.0.1:${t.port + 1}`,
    ]) {
      for (const auth of ["", `${bearer()}\n`]) {
        const a = await t.raw(`GET /api/v1/nodes HTTP/1.1\nHost: ${host}\n${auth}`);
        expect([a.status, a.json.error?.code], `Host ${host}: ${a.body}`).toEqual([421, "misdirected_host"]);
      }
    }
    const post = await t.raw(
      `POST /api/v1/unsettled/settle HTTP/1.1\nHost: evil.example:${t.port}\n${bearer()}\nContent-Type: application/json`,
      "{}",
    );
    expect(post.status).toBe(421);
  });

  it("the listen address, localhost and [::1] with the listen port are this server", async () => {
    for (const host of [t.host, `localhost:${t.port}`, `LOCALHOST:${t.port}`, `[::1]:${t.port}`, "localhost"]) {
      const a = await t.raw(`GET /api/v1/nodes HTTP/1.1\nHost: ${host}\n${bearer()}`);
      expect([a.status, a.body], host).toEqual([200, '{"nodes":[]}']);
    }
  });

  it("no answer may be framed or sniffed, and the dashboard runs under a strict policy", async () => {
    for (const path of ["/api/v1/nodes", "/api/v1/health", "/", "/api/v1/nope", "/healthz"]) {
      const a = await t.raw(`GET ${path} HTTP/1.1\nHost: ${t.host}`);
      expect(a.headers["x-frame-options"], path).toBe("DENY");
      expect(a.headers["x-content-type-options"], path).toBe("nosniff");
      expect(a.headers["content-security-policy"], path).toContain("frame-ancestors 'none'");
    }
    const page = await t.raw(`GET / HTTP/1.1\nHost: ${t.host}`);
    expect(page.headers["content-security-policy"]).toMatch(/default-src 'none'; script-src 'self'/);
    expect(page.headers["content-security-policy"]).not.toContain("unsafe");
  });
});

describe("the token", () => {
  it("a wrong token of the same length is 401 on every private route it tries", async () => {
    const wrong = nearToken();
    expect(wrong.length).toBe(t.server.token.length);
    for (const [method, path, body] of [
      ["GET", "/api/v1/nodes", ""],
      ["POST", "/api/v1/nodes", ADD_NODE],
      ["POST", "/api/v1/unsettled/settle", "{}"],
      ["GET", "/api/v1/audit/export", ""],
      ["GET", "/metrics", ""],
    ] as const) {
      const a = await t.raw(
        `${method} ${path} HTTP/1.1\nHost: ${t.host}\nAuthorization: Bearer ${wrong}${body ? "\nContent-Type: application/json" : ""}`,
        body,
      );
      expect([a.status, a.json.error?.code], `${method} ${path}`).toEqual([401, "unauthorized"]);
      expect(a.body).not.toContain(t.server.token);
    }
  });
});

describe("paths that are not routes", () => {
  it("an unknown /api path is a JSON 404, never the dashboard's HTML", async () => {
    for (const path of [
      "/api",
      "/api/",
      "/api/v1",
      "/api/v1/",
      "/api/v1/nodes/",
      "/api/v2/nodes",
      "/api/v1/x/../nodes",
      "/api/v1/nodes;x",
    ]) {
      const a = await t.raw(`GET ${path} HTTP/1.1\nHost: ${t.host}\n${bearer()}`);
      expect([a.status, a.json.error?.code, a.headers["content-type"]], `${path}: ${a.body.slice(0, 80)}`).toEqual([
        404,
        "not_found",
        "application/json; charset=utf-8",
      ]);
    }
  });

  it("a wrong method on a known path is 405 with Allow, before and after authentication", async () => {
    for (const auth of ["", `${bearer()}\n`]) {
      const del = await t.raw(`DELETE /api/v1/nodes HTTP/1.1\nHost: ${t.host}\n${auth}`);
      expect([del.status, del.json.error?.code, del.headers.allow]).toEqual([
        405,
        "method_not_allowed",
        "GET, POST, HEAD",
      ]);
      const put = await t.raw(
        `PUT /api/v1/instances/abc/stop HTTP/1.1\nHost: ${t.host}\n${auth}Content-Type: application/json`,
        "{}",
      );
      expect([put.status, put.headers.allow]).toEqual([405, "POST"]);
      const probe = await t.raw(`POST /healthz HTTP/1.1\nHost: ${t.host}\n${auth}`);
      expect([probe.status, probe.headers.allow]).toEqual([405, "GET, HEAD"]);
    }
  });
});

describe("bodies the shell refuses even from the token holder", () => {
  it("a body over the limit is 413 and a body without a type is 415, from the token holder too", async () => {
    const big = await t.raw(
      `POST /api/v1/nodes HTTP/1.1\nHost: ${t.host}\n${bearer()}\nContent-Type: application/json`,
      `{"addr":"${"x".repeat(2 * 1024 * 1024)}"}`,
    );
    expect([big.status, big.json.error?.code]).toEqual([413, "payload_too_large"]);
    const untyped = await t.raw(`POST /api/v1/nodes HTTP/1.1\nHost: ${t.host}\n${bearer()}`, ADD_NODE);
    expect([untyped.status, untyped.json.error?.code]).toEqual([415, "unsupported_media_type"]);
  });
});

describe("afterwards", () => {
  it("the controller's chain holds nothing for any refused request", async () => {
    // Run last (vitest keeps file order): every request above was refused before a handler.
    const events = t.chain();
    expect(
      events.map((e) => e.seq),
      JSON.stringify(events.slice(before.length).map((e) => e.kind)),
    ).toEqual(before);
    expect(events.filter((e) => e.kind === "api.call" || e.source === "peer")).toEqual([]);
    const nodes = await t.raw(`GET /api/v1/nodes HTTP/1.1\nHost: ${t.host}\n${bearer()}`);
    expect(nodes.body, "no node was added").toBe('{"nodes":[]}');
  });
});
