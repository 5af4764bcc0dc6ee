/**
 * An API fixture over real parts: a temp berth home with a real SQLite controller (its chain included), the real
 * fastify app driven through `inject` (no socket) or, with `listen`, a real listener.
 */
import { databaseOption, testDatabaseFor } from "../support/test-database.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { openDatabase } from "../../src/store/sqlite.js";
import type { SealedEvent } from "../../src/core/chain/event.js";
import type { SigningKey } from "../../src/core/crypto/ed25519.js";
import { generateSigningKey, saveKeyFile } from "../../src/keys/key-file.js";
import { buildApp } from "../../src/server/app.js";
import { ErrorSchema, ROUTES, type RouteSpec } from "../../src/server/contract.js";
import { API_BASE } from "../../src/server/openapi.js";
import { HANDLERS } from "../../src/server/server.js";
import type { AuditStreams } from "../../src/server/sse.js";
import { controllerKeyPath, type KubernetesAccess, openServerState, type ServerState } from "../../src/server/state.js";
import { loadOrCreateToken } from "../../src/server/token.js";
import { NodeProcess } from "../mesh/harness.js";
import { probePackage, TEST_PERMIT, writeJson } from "../mesh-controller/support/package.js";

export interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
  readonly headers: Record<string, unknown>;
}

export interface ApiFixture {
  readonly dir: string;
  readonly token: string;
  readonly state: ServerState;
  /** The PostgreSQL address of this fixture's store, undefined on SQLite. */
  readonly database: string | undefined;
  readonly app: FastifyInstance;
  readonly streams: AuditStreams;
  /** `token: null` sends no Authorization header. */
  call(
    method: "GET" | "POST" | "PUT" | "DELETE",
    url: string,
    opts?: { body?: unknown; raw?: string; token?: string | null; headers?: Record<string, string> },
  ): Promise<Answer>;
  /** Every api.call event on the controller chain, oldest first. */
  apiEvents(): Promise<SealedEvent[]>;
  close(): Promise<void>;
}

const fixtures = new Set<ApiFixture>();

export async function apiFixture(
  opts: {
    kubernetes?: KubernetesAccess;
    webRoot?: string;
    dir?: string;
    database?: string;
    log?: { level: "debug"; stream: NodeJS.WritableStream };
  } = {},
): Promise<ApiFixture> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "berth-api-"));
  const token = loadOrCreateToken(dir);
  // The controller's store: `opts.database`, else a PostgreSQL database of its own with BERTH_TEST_DATABASE=postgres.
  const database = opts.database ?? (await testDatabaseFor(dir));
  const state = await openServerState({
    dataDir: dir,
    version: "test",
    ...databaseOption(database),
    kubernetes: opts.kubernetes ?? notConfigured,
  });
  const { app, streams } = buildApp({
    state,
    token,
    webRoot: opts.webRoot ?? join(dir, "no-web"),
    handlers: HANDLERS,
    streamTimings: { pollMs: 100, heartbeatMs: 200 },
    ...(opts.log ? { logLevel: opts.log.level, logStream: opts.log.stream } : { logLevel: "silent" as const }),
  });
  await app.ready();
  const fx: ApiFixture = {
    dir,
    token,
    state,
    database,
    app,
    streams,
    async call(method, url, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const auth = o.token === undefined ? token : o.token;
      if (auth !== null) headers.authorization = `Bearer ${auth}`;
      const payload = o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body));
      if (payload !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
      const r = await app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });
      let body: unknown = null;
      try {
        body = JSON.parse(r.body);
      } catch {
        body = null;
      }
      checkContract(method, url, r.statusCode, body);
      return { status: r.statusCode, body, text: r.body, headers: r.headers };
    },
    apiEvents: () => state.controller.store.chain.find({ source: "api" }),
    async close() {
      fixtures.delete(fx);
      await app.close();
      await state.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  fixtures.add(fx);
  return fx;
}

/** Runs SQL on the fixture's store from another connection, as another process would (one statement per engine). */
export async function execOnStore(
  fx: ApiFixture,
  sql: { readonly sqlite: string; readonly postgres: string },
): Promise<void> {
  if (fx.database === undefined) {
    const db = openDatabase(fx.state.dbPaths.controller);
    try {
      db.exec(sql.sqlite);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: fx.database });
  await client.connect();
  try {
    await client.query(sql.postgres);
  } finally {
    await client.end();
  }
}

export async function closeFixtures(): Promise<void> {
  for (const fx of [...fixtures]) await fx.close();
}

export const notConfigured: KubernetesAccess = {
  configured: () => ({ configured: false, reason: "no kubeconfig (test)" }),
  connect: async () => ({ ok: false, error: "not configured" }),
  clock: {
    now: () => performance.now(),
    wallNow: () => Date.now(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  },
};

export type ErrorBody = { error: { code: string; message: string; issues?: Array<{ path: string; message: string }> } };

const routePatterns = ROUTES.map((r) => ({
  route: r,
  pattern: new RegExp(`^${API_BASE}${r.path.replace(/\{[a-z_]+\}/g, "[^/]+")}$`),
}));

function routeOf(method: string, url: string): RouteSpec | undefined {
  const path = url.split("?")[0] ?? "";
  return routePatterns.find((p) => p.route.method === method && p.pattern.test(path))?.route;
}

/**
 * Every answer the tests see is checked against the contract: a success body against the route's response schema
 * (the one the OpenAPI document publishes), an error body against the error schema.
 */
export function checkContract(method: string, url: string, status: number, body: unknown): void {
  const route = routeOf(method, url);
  if (route === undefined || route.produces !== undefined) return;
  if (status >= 200 && status < 300) {
    const parsed = route.response.safeParse(body);
    if (!parsed.success)
      throw new Error(
        `${method} ${url} answered ${status} with a body the contract does not describe: ${JSON.stringify(parsed.error.issues.slice(0, 3))}`,
      );
  } else {
    // A failed verb or deploy answers its own document (a VerbResult with kind refused/unreachable…, a deploy with ok
    // false); everything else answers the error shape.
    const parsed = ErrorSchema.safeParse(body);
    if (!parsed.success && !route.response.safeParse(body).success)
      throw new Error(
        `${method} ${url} answered ${status} with a body that is not the error shape: ${JSON.stringify(body).slice(0, 300)}`,
      );
  }
}

/**
 * A berth home with a controller key, a signed probe package, its signer trusted and the test permit, and a real
 * `berth node serve` daemon that trusts that controller and signer (test/mesh/harness.ts).
 */
export async function meshHome(
  prefix: string,
  dirs: string[],
): Promise<{ dir: string; key: SigningKey; pkgDir: string; node: NodeProcess }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  const key = generateSigningKey();
  saveKeyFile(controllerKeyPath(dir), key);
  const signer = generateSigningKey();
  const pkgDir = join(dir, "pkg");
  probePackage(pkgDir, signer);
  writeJson(join(dir, "signers.json"), [{ key: signer.publicKey, name: "test-signer" }]);
  writeJson(join(dir, "permits.json"), [TEST_PERMIT]);
  const node = await NodeProcess.create({
    controllers: [key.publicKey],
    signers: [signer.publicKey],
    permits: [TEST_PERMIT],
  });
  return { dir, key, pkgDir, node };
}
