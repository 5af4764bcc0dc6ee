/**
 * The HTTP API through fastify's `inject` over a real SQLite controller: auth, every validation error naming its
 * field, the api.call audit pairs, the empty-state answers of every read route, the audit routes and the static
 * dashboard. The real listener and real node daemons are in end-to-end.test.ts.
 */
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { Writable } from "node:stream";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { generateSigningKey, loadKeyFile } from "../../src/keys/key-file.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { controllerKeyPath } from "../../src/server/state.js";
import { ROUTES } from "../../src/server/contract.js";
import { API_BASE } from "../../src/server/openapi.js";
import { startServer } from "../../src/server/server.js";
import { loadOrCreateToken, TOKEN_FILE, TokenFileError, tokenId } from "../../src/server/token.js";
import { databaseOption } from "../support/test-database.js";
import { probePackage, writeJson } from "../mesh-controller/support/package.js";
import { apiFixture, checkContract, closeFixtures, type ErrorBody, execOnStore } from "./support.js";

afterEach(closeFixtures);

const HEX = "ab".repeat(32);
/** A concrete URL for a route's path template. */
const urlOf = (path: string) => `${API_BASE}${path.replace("{decision_id}", HEX).replace(/\{[a-z_]+\}/g, "x1")}`;

function errorOf(body: unknown): ErrorBody["error"] {
  return (body as ErrorBody).error;
}

describe("auth", () => {
  it("health and the OpenAPI document answer without a token", async () => {
    const fx = await apiFixture();
    const health = await fx.call("GET", `${API_BASE}/health`, { token: null });
    expect([health.status, health.body]).toEqual([200, { ok: true, version: "test" }]);
    const doc = await fx.call("GET", `${API_BASE}/openapi.json`, { token: null });
    expect([doc.status, (doc.body as { openapi: string }).openapi]).toEqual([200, "3.1.0"]);
  });

  it("every other route refuses a missing, malformed or wrong token with 401 and WWW-Authenticate, and chains nothing", async () => {
    const fx = await apiFixture();
    const before = (await fx.state.controller.store.chain.tip()).seq;
    const protectedRoutes = ROUTES.filter((r) => !r.public);
    expect(protectedRoutes.length).toBeGreaterThan(30);
    for (const r of protectedRoutes) {
      for (const [token, headers] of [
        [null, {}],
        ["x", { authorization: `Basic ${fx.token}` }],
        ["wrong-token-of-the-right-shape-0123456789", {}],
        [`${fx.token} extra`, {}],
      ] as const) {
        const a = await fx.call(r.method, urlOf(r.path), {
          token: headers.authorization ? null : token,
          headers: { ...headers },
          body: {},
        });
        expect(a.status, `${r.method} ${r.path} with ${JSON.stringify(token)}`).toBe(401);
        expect(errorOf(a.body).code).toBe("unauthorized");
        expect(a.headers["www-authenticate"]).toBe('Bearer realm="berth"');
        expect(a.text).not.toContain(fx.token);
      }
    }
    expect((await fx.state.controller.store.chain.tip()).seq, "unauthenticated requests are never chained").toBe(
      before,
    );
  });

  it("the token file is created 0600 and one readable by group or others is refused at start", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-token-"));
    const token = loadOrCreateToken(dir);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(loadOrCreateToken(dir), "the same token at the next start").toBe(token);
    chmodSync(join(dir, TOKEN_FILE), 0o644);
    expect(() => loadOrCreateToken(dir)).toThrow(TokenFileError);
    expect(() => loadOrCreateToken(dir)).toThrow(/chmod 600/);
    await expect(startServer({ dataDir: dir, port: 0 })).rejects.toThrow(/readable by group or others/);
    expect(tokenId(token)).toMatch(/^token:[0-9a-f]{8}$/);
  });
});

/** [method, url, body or raw text, the field the error must name] */
const BAD_REQUESTS: ReadonlyArray<readonly [string, string, unknown, string]> = [
  ["POST", "/nodes", {}, "body.addr"],
  ["POST", "/nodes", { addr: "no-port" }, "body.addr"],
  ["POST", "/nodes", { addr: "h:1", tier: "gold" }, "body.tier"],
  ["POST", "/nodes", { addr: "h:1", key: "KEY" }, "body.key"],
  ["POST", "/nodes", { addr: "h:1", admin: true }, "body.admin"],
  ["PUT", "/nodes/n1/tier", { tier: "root" }, "body.tier"],
  ["PUT", "/nodes/n1/tier", { tier: "paired", why: "x" }, "body.why"],
  ["POST", "/packages", {}, "body.path"],
  ["POST", "/packages", { path: 7 }, "body.path"],
  ["POST", "/placements", {}, "body.package"],
  ["POST", "/placements", { package: "p", name: "Not A Name" }, "body.name"],
  ["POST", "/placements", { package: "p", prefer: ["zz"] }, "body.prefer.0"],
  ["POST", "/placements", { package: "p", dry_run: true }, "body.dry_run"],
  ["POST", "/placements", { package: "p", config: { mode: "forever" } }, "body.config.mode"],
  ["POST", "/placements/explain", { package: "" }, "body.package"],
  ["POST", "/instances/i1/stop", { grace_ms: -1 }, "body.grace_ms"],
  ["POST", "/instances/i1/start", { now: true }, "body.now"],
  ["POST", "/instances/i1/unload", [], "body"],
  ["POST", "/unsettled/settle", { all: true }, "body.all"],
  [
    "POST",
    "/agents",
    { apiVersion: "berth/v1", kind: "Agent", metadata: { name: "BAD" }, spec: { target: "mesh", package: "/p" } },
    "body.metadata.name",
  ],
  [
    "POST",
    "/agents",
    { apiVersion: "berth/v1", kind: "Agent", metadata: { name: "a" }, spec: { target: "mesh" } },
    "body.spec.package",
  ],
  [
    "POST",
    "/agents",
    { apiVersion: "berth/v2", kind: "Agent", metadata: { name: "a" }, spec: { target: "mesh", package: "/p" } },
    "body.apiVersion",
  ],
  ["POST", "/agents", "[not json", "body"],
  ["POST", "/agents/a/replace", { force: true }, "body.force"],
  ["POST", "/agents/a/stop", { now: 1 }, "body.now"],
  ["POST", "/k8s/agents/a/stop", {}, "body.namespace"],
  ["GET", "/nodes?refresh=maybe", undefined, "query.refresh"],
  ["GET", "/nodes?verbose=1", undefined, "query.verbose"],
  ["GET", "/placements/not-a-decision", undefined, "params.decision_id"],
  ["GET", "/instances/i1/logs?tail_bytes=999999", undefined, "query.tail_bytes"],
  ["GET", "/agents/Not_An_Agent", undefined, "params.name"],
  ["GET", "/audit/events?limit=0", undefined, "query.limit"],
  ["GET", "/audit/events?chain=other", undefined, "query.chain"],
  ["GET", "/audit/verify?chain=", undefined, "query.chain"],
  ["GET", "/k8s/agents/a?namespace=", undefined, "query.namespace"],
];

describe("validation", () => {
  it("every bad request answers 400 invalid_request whose message and issues name the field", async () => {
    const fx = await apiFixture();
    for (const [method, path, body, field] of BAD_REQUESTS) {
      const a = await fx.call(
        method as "GET",
        `${API_BASE}${path}`,
        typeof body === "string" ? { raw: body } : body === undefined ? {} : { body },
      );
      const what = `${method} ${path} ${JSON.stringify(body)}`;
      expect(a.status, what).toBe(400);
      const e = errorOf(a.body);
      expect(e.code, what).toBe("invalid_request");
      expect(
        e.issues?.map((i) => i.path),
        what,
      ).toContain(field);
      expect(e.message, what).toContain(field);
    }
  });

  it("a refused mutating request leaves only its api.call pair: the request, then an outcome naming 400 and the field", async () => {
    const fx = await apiFixture();
    const before = (await fx.state.controller.store.chain.tip()).seq;
    const placementsBefore = (await fx.state.controller.placements()).length;
    const a = await fx.call("POST", `${API_BASE}/placements`, { body: { package: "p", name: "Bad Name" } });
    expect(a.status).toBe(400);
    const after = await fx.state.controller.store.chain.find({ fromSeq: before + 1 });
    expect(after.map((e) => [e.source, e.kind, e.payload.phase])).toEqual([
      ["api", "api.call", "request"],
      ["api", "api.call", "outcome"],
    ]);
    const [request, outcome] = after.map((e) => e.payload);
    expect(request).toMatchObject({
      method: "POST",
      route: "/api/v1/placements",
      who: tokenId(fx.token),
      remote: "127.0.0.1",
    });
    expect(outcome).toMatchObject({
      call_id: request?.call_id,
      status: 400,
      error: "invalid_request",
      fields: ["body.name"],
      who: tokenId(fx.token),
    });
    expect((await fx.state.controller.placements()).length).toBe(placementsBefore);
    expect(JSON.stringify(after), "the token itself is never chained").not.toContain(fx.token);
  });
});

describe("audited calls", () => {
  it("a successful mutating call is a request/outcome pair sharing a call id, with who, where from, route and status", async () => {
    const fx = await apiFixture();
    const a = await fx.call("POST", `${API_BASE}/unsettled/settle`, { body: {} });
    expect([a.status, a.body]).toEqual([200, { settled: { adopted: 0, settledEmpty: 0, skipped: [] }, unsettled: [] }]);
    const pair = (await fx.apiEvents()).map((e) => e.payload);
    expect(pair).toHaveLength(2);
    expect(pair[0]).toMatchObject({
      phase: "request",
      route: "/api/v1/unsettled/settle",
      method: "POST",
      who: tokenId(fx.token),
      remote: "127.0.0.1",
    });
    expect(pair[1]).toMatchObject({
      phase: "outcome",
      call_id: pair[0]?.call_id,
      status: 200,
      error: null,
      refs: { adopted: 0, released: 0 },
    });
    expect((await fx.state.controller.store.chain.verifyStored()).ok).toBe(true);
  });

  it("reads are not chained", async () => {
    const fx = await apiFixture();
    for (const url of ["/nodes", "/placements", "/instances", "/unsettled", "/agents", "/packages", "/audit/chains"]) {
      expect((await fx.call("GET", `${API_BASE}${url}`)).status, url).toBe(200);
    }
    expect(await fx.apiEvents()).toEqual([]);
  });

  it("a node that cannot be described is refused with 422 and the outcome says so", async () => {
    const fx = await apiFixture();
    const a = await fx.call("POST", `${API_BASE}/nodes`, { body: { addr: "127.0.0.1:1", tier: "paired" } });
    expect(a.status).toBe(422);
    expect(errorOf(a.body)).toMatchObject({ code: "node_not_added" });
    expect((await fx.apiEvents()).map((e) => [e.payload.phase, e.payload.status ?? null])).toEqual([
      ["request", null],
      ["outcome", 422],
    ]);
    expect((await fx.call("GET", `${API_BASE}/nodes`)).body).toEqual({ nodes: [] });
  });
});

describe("empty state and not found", () => {
  it("the read routes answer their empty documents", async () => {
    const fx = await apiFixture();
    const expected: Record<string, unknown> = {
      "/nodes": { nodes: [] },
      "/packages": { packages: [] },
      "/placements": { placements: [] },
      "/instances": { instances: [] },
      "/unsettled": { unsettled: [] },
      "/agents": { agents: [] },
      "/k8s/agents": { configured: false, context: null, agents: [], error: null },
    };
    for (const [url, body] of Object.entries(expected))
      expect((await fx.call("GET", `${API_BASE}${url}`)).body, url).toEqual(body);
  });

  it("unknown objects answer 404 not_found with what to do", async () => {
    const fx = await apiFixture();
    for (const [method, url] of [
      ["GET", `/placements/${HEX}`],
      ["GET", "/instances/scout-0123456789ab"],
      ["POST", "/instances/scout-0123456789ab/stop"],
      ["GET", "/instances/scout-0123456789ab/logs"],
      ["GET", "/agents/scout"],
      ["GET", "/agents/scout/logs"],
      ["POST", "/agents/scout/stop"],
      ["POST", "/agents/scout/replace"],
      ["PUT", "/nodes/0123456789abcdef0123456789abcdef/tier"],
      ["GET", "/no/such/route"],
    ] as const) {
      const a = await fx.call(
        method,
        `${API_BASE}${url}`,
        method === "GET" ? {} : { body: method === "PUT" ? { tier: "paired" } : {} },
      );
      expect(a.status, url).toBe(404);
      expect(errorOf(a.body).code, url).toBe("not_found");
    }
  });

  it("without a Kubernetes context the Kubernetes routes answer 409 k8s_not_configured and the list says configured:false", async () => {
    const fx = await apiFixture();
    for (const [method, url, body] of [
      ["POST", "/k8s/agents", { apiVersion: 1 }],
      ["GET", "/k8s/agents/a?namespace=agents", undefined],
      ["GET", "/k8s/agents/a/logs?namespace=agents", undefined],
      ["POST", "/k8s/agents/a/stop", { namespace: "agents" }],
    ] as const) {
      const a = await fx.call(method, `${API_BASE}${url}`, body === undefined ? {} : { body });
      if (method === "POST" && url === "/k8s/agents") {
        // The deploy request is checked first: a bad one is a 400 naming the problem, configured or not.
        expect(a.status, url).toBe(400);
        continue;
      }
      expect([a.status, errorOf(a.body).code], url).toEqual([409, "k8s_not_configured"]);
    }
  });
});

describe("audit routes", () => {
  it("list chains, page events, verify and export the controller chain; the k8s chain is 404 until it exists", async () => {
    const fx = await apiFixture();
    await fx.call("POST", `${API_BASE}/unsettled/settle`, { body: {} });
    const chains = (await fx.call("GET", `${API_BASE}/audit/chains`)).body as {
      chains: Array<{ name: string; events: number; head: { seq: number } }>;
    };
    expect(chains.chains.map((c) => c.name)).toEqual(["controller"]);
    const head = chains.chains[0]?.head.seq ?? -1;
    const page = (await fx.call("GET", `${API_BASE}/audit/events?after=${head - 2}&limit=10`)).body as {
      events: Array<{ seq: number; kind: string }>;
      head: number;
    };
    expect(page.events.map((e) => [e.seq, e.kind])).toEqual([
      [head - 1, "api.call"],
      [head, "api.call"],
    ]);
    expect(page.head).toBe(head);
    const verify = (await fx.call("GET", `${API_BASE}/audit/verify`)).body as { ok: boolean; events: number };
    expect(verify).toMatchObject({ ok: true, events: head + 1 });
    const exported = await fx.call("GET", `${API_BASE}/audit/export?chain=controller`);
    expect(exported.headers["content-type"]).toContain("application/x-ndjson");
    const lines = exported.text.trimEnd().split("\n");
    expect(lines).toHaveLength(head + 1);
    expect(JSON.parse(lines.at(-1) ?? "{}")).toMatchObject({ seq: head, kind: "api.call" });
    const k8s = await fx.call("GET", `${API_BASE}/audit/verify?chain=k8s`);
    expect([k8s.status, errorOf(k8s.body).code]).toEqual([404, "not_found"]);
  });
});

describe("static dashboard", () => {
  function webRoot(): string {
    const root = mkdtempSync(join(tmpdir(), "berth-web-"));
    mkdirSync(join(root, "web", "assets"), { recursive: true });
    writeFileSync(join(root, "web", "index.html"), "<!doctype html><title>berth dashboard</title>");
    writeFileSync(join(root, "web", "assets", "app-1234.js"), "console.log('berth');");
    writeFileSync(join(root, "secret.txt"), "outside the web root");
    symlinkSync(join(root, "secret.txt"), join(root, "web", "assets", "link.txt"));
    return join(root, "web");
  }

  it("serves files with their content type and index.html for dashboard routes", async () => {
    const fx = await apiFixture({ webRoot: webRoot() });
    const index = await fx.call("GET", "/", { token: null });
    expect([index.status, index.headers["content-type"], index.text]).toEqual([
      200,
      "text/html; charset=utf-8",
      "<!doctype html><title>berth dashboard</title>",
    ]);
    const route = await fx.call("GET", "/instances/scout?x=1", { token: null });
    expect([route.status, route.text]).toEqual([200, index.text]);
    const js = await fx.call("GET", "/assets/app-1234.js", { token: null });
    expect([js.status, js.headers["content-type"], js.text]).toEqual([
      200,
      "text/javascript; charset=utf-8",
      "console.log('berth');",
    ]);
    expect((await fx.call("GET", "/assets/missing.js", { token: null })).status).toBe(404);
  });

  it("never serves a file outside the web root, however the path is spelled", async () => {
    const fx = await apiFixture({ webRoot: webRoot() });
    for (const url of [
      "/../secret.txt",
      "/assets/../../secret.txt",
      "/%2e%2e/secret.txt",
      "/assets/%2e%2e%2f%2e%2e%2fsecret.txt",
      "/assets/link.txt",
      "/..%5csecret.txt",
      "/%00",
    ]) {
      const a = await fx.call("GET", url, { token: null });
      expect(a.text, url).not.toContain("outside the web root");
      // 400: an escaped `.` or `/` is a second spelling of a path, refused at the edge (edge.ts).
      expect([200, 400, 404], url).toContain(a.status);
      if (a.status === 200) expect(a.text, url).toContain("berth dashboard");
    }
  });

  it("without a built dashboard / says how to build it", async () => {
    const fx = await apiFixture();
    const a = await fx.call("GET", "/", { token: null });
    expect(a.status).toBe(200);
    expect(a.text).toContain("dashboard is not built");
  });
});

describe("the write-ahead rule", () => {
  it("when the request cannot be chained the call answers 500 audit_unavailable and does nothing", async () => {
    const fx = await apiFixture();
    const signer = generateSigningKey();
    const pkgDir = join(fx.dir, "pkg");
    probePackage(pkgDir, signer);
    writeJson(join(fx.dir, "signers.json"), [{ key: signer.publicKey, name: "test-signer" }]);
    // Another connection makes every api.call insert fail, as a full disk would.
    await execOnStore(fx, {
      sqlite:
        "CREATE TRIGGER refuse_api BEFORE INSERT ON audit_event WHEN NEW.source = 'api' BEGIN SELECT RAISE(ABORT, 'disk full'); END",
      postgres:
        "CREATE FUNCTION refuse_api() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.source = 'api' THEN RAISE EXCEPTION 'disk full'; END IF; RETURN NEW; END $$; CREATE TRIGGER refuse_api BEFORE INSERT ON audit_event FOR EACH ROW EXECUTE FUNCTION refuse_api()",
    });
    const refused = await fx.call("POST", `${API_BASE}/packages`, { body: { path: pkgDir } });
    expect([refused.status, errorOf(refused.body).code]).toEqual([500, "audit_unavailable"]);
    expect((await fx.call("GET", `${API_BASE}/packages`)).body, "the package was not taken in").toEqual({
      packages: [],
    });

    await execOnStore(fx, { sqlite: "DROP TRIGGER refuse_api", postgres: "DROP TRIGGER refuse_api ON audit_event" });
    const taken = await fx.call("POST", `${API_BASE}/packages`, { body: { path: pkgDir } });
    expect(taken.status, taken.text).toBe(201);
    const listed = (await fx.call("GET", `${API_BASE}/packages`)).body as {
      packages: Array<{ name: string; kind: string; verified: boolean; package_id: string }>;
    };
    expect(listed.packages.map((p) => [p.package_id, p.name, p.kind, p.verified])).toEqual([
      [(taken.body as { package_id: string }).package_id, "probe", "agent", true],
    ]);
  });

  it("a POST without a body needs no Content-Type; one with a body must be application/json (415, not chained)", async () => {
    const fx = await apiFixture();
    const empty = await fx.app.inject({
      method: "POST",
      url: `${API_BASE}/unsettled/settle`,
      headers: { authorization: `Bearer ${fx.token}` },
    });
    expect(empty.statusCode, empty.body).toBe(200);
    const seq = (await fx.state.controller.store.chain.tip()).seq;
    const typed = await fx.call("POST", `${API_BASE}/unsettled/settle`, {
      raw: "{}",
      headers: { "content-type": "text/plain" },
    });
    expect([typed.status, errorOf(typed.body).code]).toEqual([415, "unsupported_media_type"]);
    expect((await fx.state.controller.store.chain.tip()).seq, "refused before the handler: nothing chained").toBe(seq);
  });

  it("a body over the limit is refused with 413 payload_too_large", async () => {
    const fx = await apiFixture();
    const a = await fx.call("POST", `${API_BASE}/placements`, {
      raw: JSON.stringify({ package: "x".repeat(2 * 1024 * 1024) }),
    });
    expect([a.status, errorOf(a.body).code]).toEqual([413, "payload_too_large"]);
  });
});

describe("the contract check the tests apply to every answer", () => {
  it("refuses a success body the route's schema does not describe, and an error body of another shape", () => {
    expect(() => checkContract("GET", `${API_BASE}/nodes`, 200, { nodes: [{ addr: "h:1" }] })).toThrow(
      /contract does not describe/,
    );
    expect(() => checkContract("GET", `${API_BASE}/placements`, 404, { message: "no" })).toThrow(/not the error shape/);
    expect(() => checkContract("GET", `${API_BASE}/placements`, 200, { placements: [] })).not.toThrow();
  });
});

describe("the CLI beside the server", () => {
  it("a node another process learned, and a tier it changed, show in the server's node list without a restart", async () => {
    const fx = await apiFixture();
    expect((await fx.call("GET", `${API_BASE}/nodes`)).body).toEqual({ nodes: [] });
    // A second controller on the same files, as `berth nodes add` / `berth nodes tier` in another process.
    const openCli = () => {
      const key = loadKeyFile(controllerKeyPath(fx.dir));
      return MeshController.open({
        dataDir: fx.dir,
        key,
        connector: new ControllerConnector({ identity: key, connectTimeoutMs: 500 }),
        ...databaseOption(fx.database),
      });
    };
    const cli = await openCli();
    try {
      const nodeId = "0123456789abcdef0123456789abcdef";
      await cli.store.learnTarget(
        {
          addr: "127.0.0.1:9",
          node_id: nodeId,
          key: "cd".repeat(32),
          tier: "discovered",
          tier_source: "default",
          learned_ms: Date.now(),
        },
        {
          source: "trust",
          kind: "peer.add",
          payload: { node: nodeId, addr: "127.0.0.1:9", key: "cd".repeat(32), tier: "discovered", how: "tofu" },
        },
      );
      const seen = (await fx.call("GET", `${API_BASE}/nodes`)).body as {
        nodes: Array<{ node_id: string; tier: string }>;
      };
      expect(seen.nodes.map((n) => [n.node_id, n.tier])).toEqual([[nodeId, "discovered"]]);
      const tierCli = await openCli(); // each CLI verb is a fresh process
      try {
        expect(await tierCli.setTier(nodeId, "paired")).toBe(true);
      } finally {
        await tierCli.close();
      }
      const after = (await fx.call("GET", `${API_BASE}/nodes`)).body as {
        nodes: Array<{ node_id: string; tier: string }>;
      };
      expect(after.nodes.map((n) => [n.node_id, n.tier])).toEqual([[nodeId, "paired"]]);
      const put = await fx.call("PUT", `${API_BASE}/nodes/${nodeId}/tier`, { body: { tier: "pinned" } });
      expect([put.status, put.body]).toEqual([200, { node: nodeId, tier: "pinned" }]);
    } finally {
      await cli.close();
    }
  });
});

describe("logs", () => {
  it("at debug level the log has the requests and the refused ones, and never the token", async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const fx = await apiFixture({ log: { level: "debug", stream } });
    await fx.call("GET", `${API_BASE}/nodes`);
    await fx.call("POST", `${API_BASE}/unsettled/settle`, { body: {} });
    await fx.call("GET", `${API_BASE}/nodes`, { token: `${fx.token.slice(0, -1)}x` });
    const text = lines.join("");
    expect(text).toContain("unauthenticated API request refused");
    expect(text).toContain("/api/v1/unsettled/settle");
    expect(text).not.toContain(fx.token);
    expect(text).not.toContain(fx.token.slice(0, 20));
  });
});
