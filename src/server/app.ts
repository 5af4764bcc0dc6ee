/**
 * The fastify application: the route table of `contract.ts` wired to its handlers, with one shell around every call.
 *
 *   request ─▶ auth (bearer; 401 is logged, never chained) ─▶ [mutating: chain api.call request — or refuse, doing
 *   nothing] ─▶ parse params, query, body with the route's schemas (400 names the field) ─▶ handler (the library)
 *   ─▶ [mutating: chain api.call outcome with status and error code] ─▶ JSON answer
 *
 * Bodies are read as text and parsed here, so a malformed body is the same 400 `invalid_request` as a wrong field.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { z } from "zod";
import type { JsonObject } from "../core/crypto/canonical.js";
import { type CallOutcome, type CallRecord, type Caller, recordOutcome, recordRequest } from "./audit.js";
import { ROUTES, type RouteSpec } from "./contract.js";
import { ApiError, invalidRequest } from "./errors.js";
import type { Handlers, Parsed } from "./handler.js";
import { API_BASE, openApiDocument } from "./openapi.js";
import { AuditStreams, parseLastEventId, type StreamTimings } from "./sse.js";
import type { ServerState } from "./state.js";
import { serveStatic } from "./static.js";
import { checkBearer, tokenId } from "./token.js";

export interface AppOptions {
  readonly state: ServerState;
  readonly token: string;
  /** The built dashboard (`dist/web`). */
  readonly webRoot: string;
  readonly handlers: Handlers;
  /** pino level; `warn` by default: refused (401) requests and failures only — the audit chain is the record. */
  readonly logLevel?: "silent" | "error" | "warn" | "info" | "debug";
  /** Where the pino lines go (default stdout, as fastify does; `berth serve` passes stderr). */
  readonly logStream?: NodeJS.WritableStream;
  readonly streamTimings?: StreamTimings;
  readonly bodyLimitBytes?: number;
}

const EMPTY = z.strictObject({});

/** `/instances/{id}/stop` → `/instances/:id/stop`. */
export const fastifyPath = (path: string) => `${API_BASE}${path.replace(/\{([a-z_]+)\}/g, ":$1")}`;

function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type("application/json; charset=utf-8").send(JSON.stringify(body));
}

function parseBody(raw: unknown): { ok: true; value: unknown } | { ok: false; error: ApiError } {
  if (raw === undefined || raw === null || (typeof raw === "string" && raw.trim() === "")) return { ok: true, value: {} };
  if (typeof raw !== "string") return { ok: true, value: raw };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch (error) {
    const why = (error as Error).message.split("\n")[0] ?? "invalid";
    return { ok: false, error: new ApiError(400, "invalid_request", `body: not valid JSON (${why}); send one JSON document`, { issues: [{ path: "body", message: `not valid JSON: ${why}` }] }) };
  }
}

function parseInputs(route: RouteSpec, req: FastifyRequest): Parsed {
  const params = (route.params ?? EMPTY).safeParse(req.params ?? {});
  if (!params.success) throw invalidRequest("params", params.error.issues);
  const query = (route.query ?? EMPTY).safeParse(req.query ?? {});
  if (!query.success) throw invalidRequest("query", query.error.issues);
  let body: unknown = {};
  if (route.body) {
    const raw = parseBody(req.body);
    if (!raw.ok) throw raw.error;
    const parsed = route.body.safeParse(raw.value);
    if (!parsed.success) throw invalidRequest("body", parsed.error.issues);
    body = parsed.data;
  }
  return { params: params.data, query: query.data, body, headers: req.headers };
}

function stringParams(params: unknown): JsonObject {
  const out: JsonObject = {};
  if (typeof params === "object" && params !== null) for (const [k, v] of Object.entries(params)) out[k] = String(v).slice(0, 200);
  return out;
}

export function buildApp(o: AppOptions): { app: FastifyInstance; streams: AuditStreams } {
  const app = Fastify({
    logger: { level: o.logLevel ?? "warn", redact: ["req.headers.authorization", "req.headers.cookie"], ...(o.logStream ? { stream: o.logStream } : {}) },
    bodyLimit: o.bodyLimitBytes ?? 1024 * 1024,
    return503OnClosing: true,
  });
  const streams = new AuditStreams(o.state, o.streamTimings);
  const who = tokenId(o.token);
  const caller = (req: FastifyRequest): Caller => ({ who, remote: req.ip });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => done(null, body));

  app.addHook("onRequest", async (req, reply) => {
    const config = req.routeOptions.config as { public?: boolean } | undefined;
    if (!req.url.startsWith(`${API_BASE}/`) || config?.public === true) return;
    const check = checkBearer(req.headers.authorization, o.token);
    if (check.ok) return;
    req.log.warn({ remote: req.ip, url: req.routeOptions.url ?? "unknown", reason: check.reason }, "unauthenticated API request refused");
    const message =
      check.reason === "missing"
        ? "this route needs Authorization: Bearer <token>; the token is in $BERTH_HOME/api.token"
        : check.reason === "malformed"
          ? "the Authorization header must be exactly `Bearer <token>`"
          : "the bearer token is not this server's; use the one in $BERTH_HOME/api.token";
    reply.header("www-authenticate", 'Bearer realm="berth"');
    return send(reply, 401, { error: { code: "unauthorized", message } });
  });
  app.addHook("preClose", async () => streams.closeAll());

  for (const route of ROUTES) {
    app.route({
      method: route.method,
      url: fastifyPath(route.path),
      config: { public: route.public === true },
      handler: async (req, reply) => {
        if (route.id === "health") return send(reply, 200, { ok: true, version: o.state.version });
        if (route.id === "openapi") return send(reply, 200, openApiDocument(o.state.version));
        if (route.id === "auditStream") return openStream(route, req, reply);
        return call(route, req, reply);
      },
    });
  }

  async function call(route: RouteSpec, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const callerOf = caller(req);
    const handler = o.handlers[route.id];
    let record: CallRecord | null = null;
    if (route.mutating) {
      try {
        record = recordRequest(o.state.controller, callerOf, { method: route.method, route: `${API_BASE}${route.path}`, params: stringParams(req.params) });
      } catch (error) {
        req.log.error({ err: error }, "api.call request could not be chained; nothing was done");
        return send(reply, 500, { error: { code: "audit_unavailable", message: "the request could not be recorded in the audit chain, so nothing was done; try again" } });
      }
    }
    let status: number;
    let body: unknown;
    let outcome: CallOutcome;
    try {
      if (!handler) throw new ApiError(500, "not_implemented", `route ${route.id} has no handler`);
      const input = parseInputs(route, req);
      const answer = await handler(input, { state: o.state, caller: callerOf });
      status = answer.status ?? route.status;
      body = answer.body;
      outcome = { status, error: status >= 400 ? (answer.error ?? "failed") : null, ...(answer.refs ? { refs: answer.refs } : {}) };
    } catch (error) {
      const e = error instanceof ApiError ? error : new ApiError(500, "internal", "the server failed while handling this request; see its log");
      if (!(error instanceof ApiError)) req.log.error({ err: error }, "handler failed");
      status = e.status;
      body = e.body();
      outcome = { status, error: e.code, fields: e.extra.issues?.map((i) => i.path) ?? [] };
    }
    if (record) {
      try {
        recordOutcome(o.state.controller, callerOf, record, outcome);
      } catch (error) {
        req.log.error({ err: error, call_id: record.call_id }, "api.call outcome could not be chained");
      }
    }
    if (route.produces === "application/x-ndjson" && status === 200) return reply.code(200).type("application/x-ndjson; charset=utf-8").send(body as string);
    return send(reply, status, body);
  }

  function openStream(route: RouteSpec, req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    let input: Parsed;
    try {
      input = parseInputs(route, req);
    } catch (error) {
      return send(reply, (error as ApiError).status, (error as ApiError).body());
    }
    const last = parseLastEventId(req.headers["last-event-id"]);
    if (!last.ok) return send(reply, 400, { error: { code: "invalid_request", message: "headers.last-event-id: must be the seq of the last event received (a non-negative integer)", issues: [{ path: "headers.last-event-id", message: "must be a non-negative integer" }] } });
    reply.hijack();
    streams.open(reply.raw, (input.query as { chain: "controller" | "k8s" }).chain, last.value);
    return undefined;
  }

  app.setNotFoundHandler((req, reply) => {
    if (req.url.startsWith("/api/")) return send(reply, 404, { error: { code: "not_found", message: `no route ${req.method} ${req.url.split("?")[0]}; GET ${API_BASE}/openapi.json lists them` } });
    if (req.method !== "GET" && req.method !== "HEAD") return send(reply, 404, { error: { code: "not_found", message: "the dashboard answers GET only" } });
    const a = serveStatic(o.webRoot, req.url);
    return reply.code(a.status).type(a.type).header("cache-control", a.cache).header("x-content-type-options", "nosniff").send(a.body);
  });

  app.setErrorHandler((error: { statusCode?: number; code?: string; message: string }, req, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 500) req.log.error({ err: error }, "request failed");
    const code = status === 413 ? "payload_too_large" : status === 415 ? "unsupported_media_type" : status < 500 ? "invalid_request" : "internal";
    const message = status === 413 ? "the body is larger than the server accepts (1 MiB)" : status < 500 ? error.message : "the server failed while handling this request; see its log";
    return send(reply, status, { error: { code, message } });
  });

  return { app, streams };
}
