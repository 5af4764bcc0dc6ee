/**
 * The fastify application: the route table of `contract.ts` wired to its handlers, with one shell around every call.
 *
 *   request ─▶ edge.ts: origin-form target, one spelling of the path (400), Host names this server (421)
 *           ─▶ auth from the matched route's own config: private unless it says `public` (401; never the URL text)
 *           ─▶ body: application/json only (415), at most the limit (413)
 *           ─▶ parse params, query, body with the route's schemas (400 names the field)
 *           ─▶ [mutating: chain api.call request — or refuse, doing nothing; `recordRides` routes: it rides the
 *              handler's first write transaction instead, issue 19] ─▶ handler (the library)
 *           ─▶ [mutating: chain api.call outcome with status and error code (with the request, when nothing was
 *              written: a refused request is one transaction); the request never committed: 500, nothing done]
 *           ─▶ JSON answer
 *   no route ─▶ `/api/…`, `/healthz`…: JSON 404, or 405 with Allow for a known path ─ else the dashboard's files
 *
 * What the chain holds (docs/security.md "What a refused request leaves"): only a call that passed every check up to
 * the handler has an api.call pair; anything refused before it is one log line and nothing in any chain. Bodies are
 * read as text and parsed here, so a malformed body is the same 400 `invalid_request` as a wrong field.
 *
 * (About 580 lines, one concept: the one request pipeline of the API, edge to handler to chain, in the order a
 * request meets it; split, the order of the checks would have to be read across files.)
 */

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from "fastify";
import { z } from "zod";
import type { JsonObject } from "../core/crypto/canonical.js";
import { failoverBoundMs } from "../core/mesh/leader-lease.js";
import { err, ok, type Result } from "../kit/result.js";
import { isStoreAway } from "../store/open.js";
import type { Ride } from "../store/riding-engine.js";
import { type Caller, type CallOutcome, type CallRecord, openCall, recordOutcome } from "./audit.js";
import { ROUTES } from "./contract.js";
import { checkHost, checkRequestTarget, DASHBOARD_CSP, type EdgeRefusal, hostNames, securityHeaders } from "./edge.js";
import { ApiError, invalidRequest } from "./errors.js";
import { callIdOf, forwardWrite, mayForwardToken } from "./forward.js";
import type { Handlers, Parsed } from "./handler.js";
import { followerVerdict } from "./leader-gate.js";
import { serverMetrics } from "./metrics.js";
import { API_BASE, openApiDocument } from "./openapi.js";
import { type Access, OPS_ROUTES, registerOps } from "./ops.js";
import type { RouteSpec } from "./route-spec.js";
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
  /**
   * pino level; `warn` by default: refused requests and failures only (one line each). At `info`, one line for every
   * request. The audit chain is the record; the log is diagnostics.
   */
  readonly logLevel?: "silent" | "error" | "warn" | "info" | "debug";
  /** Where the pino lines go (default stdout, as fastify does; `berth serve` passes stderr). */
  readonly logStream?: NodeJS.WritableStream;
  readonly streamTimings?: StreamTimings;
  readonly bodyLimitBytes?: number;
  /** The Host names answered to (edge.ts `hostNames`); default the loopback names of a 127.0.0.1 listener. */
  readonly hostNames?: ReadonlySet<string>;
  /** PEM certificate and key: HTTPS instead of HTTP. */
  readonly https?: { readonly cert: Buffer | string; readonly key: Buffer | string };
}

const EMPTY = z.strictObject({});

/** `/instances/{id}/stop` → `/instances/:id/stop`. */
export const fastifyPath = (path: string) => `${API_BASE}${path.replace(/\{([a-z_]+)\}/g, ":$1")}`;

function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type("application/json; charset=utf-8").send(JSON.stringify(body));
}

/** A follower's whole answer to a write (issue 37), as a value: a status, headers and a body already serialised. */
interface FollowerReply {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

const RETRY_NOW = { "retry-after": "1" } as const;

function json(status: number, body: unknown, headers: Readonly<Record<string, string>>): FollowerReply {
  return { status, contentType: "application/json; charset=utf-8", body: JSON.stringify(body), headers };
}

/** `/api/v1/instances/:id/stop` → a pattern for one path segment per parameter (for 405's Allow). */
const patternOf = (url: string) =>
  new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[a-z_]+/g, "[^/]+")}$`);

/** `/api/v1/audit/tlog/tile/*` → the prefix and one or more characters of any kind (a `rest` route). */
const restPatternOf = (url: string) => new RegExp(`^${url.slice(0, -1).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}.+$`);

function parseBody(raw: unknown): Result<unknown, ApiError> {
  if (raw === undefined || raw === null || (typeof raw === "string" && raw.trim() === "")) return ok({});
  if (typeof raw !== "string") return ok(raw);
  try {
    return ok(JSON.parse(raw));
  } catch (error) {
    const why = (error as Error).message.split("\n")[0] ?? "invalid";
    return err(
      new ApiError(400, "invalid_request", `body: not valid JSON (${why}); send one JSON document`, {
        issues: [{ path: "body", message: `not valid JSON: ${why}` }],
      }),
    );
  }
}

/**
 * A `rest` route's last parameter is the rest of the path as sent, never decoded: a `%2F` stays three characters (and
 * the route's schema refuses it), so no escape can name a second path.
 */
function restParams(route: RouteSpec, req: FastifyRequest): Record<string, unknown> {
  const name = /\{([a-z_]+)\}$/.exec(route.path)?.[1] as string;
  const prefix = fastifyPath(route.path).slice(0, -`:${name}`.length);
  const path = (req.raw.url ?? "").split("?", 1)[0] ?? "";
  const { "*": _decoded, ...others } = (req.params ?? {}) as Record<string, unknown>;
  return { ...others, [name]: path.startsWith(prefix) ? path.slice(prefix.length) : "" };
}

/** The URL fastify matches: `{param}` → `:param`, and a `rest` route's last one → `*`. */
export function routeUrl(route: RouteSpec): string {
  const url = fastifyPath(route.path);
  return route.rest ? url.replace(/:[a-z_]+$/, "*") : url;
}

function parseInputs(route: RouteSpec, req: FastifyRequest): Parsed {
  const params = (route.params ?? EMPTY).safeParse(route.rest ? restParams(route, req) : (req.params ?? {}));
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
  if (typeof params === "object" && params !== null)
    for (const [k, v] of Object.entries(params)) out[k] = String(v).slice(0, 200);
  return out;
}

export function buildApp(o: AppOptions): { app: FastifyInstance; streams: AuditStreams } {
  const bodyLimit = o.bodyLimitBytes ?? 1024 * 1024;
  const app = Fastify({
    logger: {
      level: o.logLevel ?? "warn",
      redact: ["req.headers.authorization", "req.headers.cookie"],
      ...(o.logStream ? { stream: o.logStream } : {}),
    },
    // One line per request, written by the onResponse hook below (fastify's own two lines carry the URL text).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    return503OnClosing: true,
    ...(o.https ? { https: { cert: o.https.cert, key: o.https.key } } : {}),
    // An undecodable escape is refused by fastify before any hook runs: answer it in the API's shape.
    frameworkErrors: (error, _req, reply) => {
      reply.headers(securityHeaders(false));
      send(reply, 400, {
        error: {
          code: "non_canonical_path",
          message: `the request target cannot be decoded (${error.code}); send the path as written in the API document`,
        },
      });
    },
  }) as unknown as FastifyInstance;
  const streams = new AuditStreams(o.state, o.streamTimings);
  const metrics = serverMetrics(o.state);
  const who = tokenId(o.token);
  const caller = (req: FastifyRequest): Caller => ({ who, remote: req.ip });
  const hosts = { names: o.hostNames ?? hostNames("127.0.0.1"), port: () => listenPort(app) };
  /** Who each request was, once authenticated, and why the edge refused it: for its one log line. */
  const authenticated = new WeakSet<FastifyRequest>();
  const refusals = new WeakMap<FastifyRequest, string>();
  /** Every method and path registered, for 405's Allow. */
  const table: Array<{ method: string; pattern: RegExp }> = [];

  app.removeAllContentTypeParsers();
  // issue 12: any other media type is a 415, so a cross-site `text/plain` POST (no preflight) is never executed.
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => done(null, body));

  function refuse(
    req: FastifyRequest,
    reply: FastifyReply,
    r: EdgeRefusal | { status: 401; code: string; message: string },
  ): FastifyReply {
    refusals.set(req, r.code);
    return send(reply, r.status, { error: { code: r.code, message: r.message } });
  }

  app.addHook("onRequest", async (req, reply) => {
    const target = checkRequestTarget(req.raw.url ?? "");
    if (target) return refuse(req, reply, target);
    const host = checkHost(req.headers.host, hosts);
    if (host) return refuse(req, reply, host);
    // No route matched: the not-found handler answers only 404/405 and the dashboard's public files.
    if (req.is404) return;
    // The matched route's own config decides; a route registered without one is private (fail closed).
    const access = (req.routeOptions.config as { access?: Access } | undefined)?.access;
    if (access === "public") return;
    const check = checkBearer(req.headers.authorization, o.token);
    if (check.ok) {
      authenticated.add(req);
      return;
    }
    const message =
      check.error === "missing"
        ? "this route needs Authorization: Bearer <token>; the token is in $BERTH_HOME/api.token"
        : check.error === "malformed"
          ? "the Authorization header must be exactly `Bearer <token>`"
          : "the bearer token is not this server's; use the one in $BERTH_HOME/api.token";
    reply.header("www-authenticate", 'Bearer realm="berth"');
    return refuse(req, reply, { status: 401, code: "unauthorized", message });
  });
  app.addHook("onSend", async (_req, reply, payload) => {
    for (const [name, value] of Object.entries(securityHeaders(false)))
      if (!reply.hasHeader(name)) reply.header(name, value);
    return payload;
  });
  app.addHook("onResponse", async (req, reply) => {
    const route = req.is404 ? "unmatched" : (req.routeOptions.url ?? "unmatched");
    metrics.observeRequest({ method: req.method, route, status: reply.statusCode }, reply.elapsedTime / 1000);
    logRequest(req, route, reply.statusCode, reply.elapsedTime);
  });
  app.addHook("preClose", async () => streams.closeAll());

  /** The request's one line: never the URL text, a body or the token (the caller is the token's id). */
  function logRequest(req: FastifyRequest, route: string, status: number, ms: number): void {
    const refused = refusals.get(req);
    const line = {
      method: req.method,
      route,
      status,
      ms: Math.round(ms * 10) / 10,
      caller: authenticated.has(req) ? who : null,
      remote: req.ip,
      ...(refused ? { refused } : {}),
    };
    if (status >= 500) req.log.error(line, "request failed");
    else if (refused === "unauthorized") req.log.warn(line, "unauthenticated API request refused");
    else if (refused) req.log.warn(line, "request refused before authentication");
    else if (status === 413 || status === 415) req.log.warn(line, "request body refused");
    else req.log.info(line, "request");
  }

  for (const route of ROUTES) {
    const url = routeUrl(route);
    table.push({ method: route.method, pattern: route.rest ? restPatternOf(url) : patternOf(url) });
    app.route({
      method: route.method,
      url,
      config: { access: route.public === true ? "public" : "token" },
      handler: async (req, reply) => {
        if (route.id === "health") return send(reply, 200, { ok: true, version: o.state.version });
        if (route.id === "openapi") return send(reply, 200, openApiDocument(o.state.version));
        if (route.id === "auditStream") return openStream(route, req, reply);
        return call(route, req, reply);
      },
    });
  }
  registerOps(app, { state: o.state, metrics });
  for (const r of OPS_ROUTES) table.push({ method: r.method, pattern: patternOf(r.url) });

  /**
   * Issue 37 (F3): a write on a follower, forwarded to the leader the store names now (forward.ts), or answered 503
   * with Retry-After when nobody leads or the request cannot reach the leader. Null when this server leads.
   *
   * It returns what to answer as a value and `call` sends it: never a FastifyReply out of an async function. A reply
   * is a thenable that settles with undefined once sent, so awaiting one read as "this server leads" and the follower
   * ran the write itself after answering it (a 503'd place committed and dispatched once the store came back).
   */
  async function followerAnswer(req: FastifyRequest): Promise<FollowerReply | null> {
    const controller = o.state.controller;
    const timing = controller.leaderTiming();
    const retryAfterS = timing === null ? 1 : Math.ceil(failoverBoundMs(timing) / 1000);
    const verdict = await followerVerdict(controller, {
      forwarded: req.headers["x-berth-forwarded-by"] !== undefined,
      retryAfterS,
    });
    if (verdict === null) return null;
    if (verdict.kind === "answer") return json(503, verdict.answer, { "retry-after": String(verdict.retryAfterS) });
    if (!mayForwardToken(verdict.url, o.https !== undefined)) {
      return json(
        503,
        {
          ...verdict.answer,
          error: {
            code: "not_leader",
            message: `this server is a follower and did not forward your write to the leader at ${verdict.url} (epoch ${verdict.epoch}): that is plain HTTP to another host, which would carry your token in clear; nothing was done, send it there yourself if you accept that`,
          },
        },
        RETRY_NOW,
      );
    }
    const callId = randomBytes(16).toString("hex");
    const outcome = await forwardWrite({
      callId,
      leaderUrl: verdict.url,
      method: req.method,
      target: req.raw.url ?? "/",
      authorization: req.headers.authorization,
      contentType: req.headers["content-type"],
      body: typeof req.body === "string" ? req.body : undefined,
      via: `pid ${process.pid} on ${hostname()}`,
      pollMs: timing?.renewEveryMs ?? 500,
      stillLeads: async () => {
        const now = await controller.currentLeaderView();
        return now?.fresh === true && now.leader?.owner_id === verdict.ownerId && now.leader.epoch === verdict.epoch;
      },
    });
    switch (outcome.kind) {
      case "answered":
        if (outcome.status === 401) {
          // The leader refused the caller's token before doing anything: the servers keep different api.token files.
          return json(
            503,
            {
              ...verdict.answer,
              error: {
                code: "not_leader",
                message: `this server is a follower and the leader at ${verdict.url} (epoch ${verdict.epoch}) refused the token it forwarded your write with (every server needs the same api.token to forward writes); nothing was done, send it to the leader with its token`,
              },
            },
            RETRY_NOW,
          );
        }
        return {
          status: outcome.status,
          contentType: outcome.contentType ?? "application/json; charset=utf-8",
          body: outcome.body,
          headers: {
            "x-berth-leader": verdict.url,
            ...(outcome.retryAfter === null ? {} : { "retry-after": outcome.retryAfter }),
          },
        };
      case "not_sent":
        req.log.warn({ leader: verdict.url, why: outcome.why }, "a write could not be forwarded to the leader");
        return json(
          503,
          {
            ...verdict.answer,
            error: {
              code: "not_leader",
              message: `this server is a follower and could not forward the write to the leader at ${verdict.url} (epoch ${verdict.epoch}: ${outcome.why}); nothing was done, send it there or try again`,
            },
          },
          RETRY_NOW,
        );
      case "lost":
        req.log.warn(
          { leader: verdict.url, why: outcome.why, call_id: callId },
          "the leader stopped answering a forwarded write",
        );
        return json(
          503,
          {
            error: {
              code: "leader_lost",
              message: `this server forwarded the write to the leader at ${verdict.url} (epoch ${verdict.epoch}), which stopped answering before it replied (${outcome.why}); whether it was done is unknown: the leader records it under call id ${callId} (an api.call event of the store's chain, with the decision it made, if it began), so check for that before sending it again`,
            },
            call_id: callId,
            leader: verdict.answer.leader,
          },
          {},
        );
      default: {
        const never: never = outcome;
        return never;
      }
    }
  }

  async function call(route: RouteSpec, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const callerOf = caller(req);
    const handler = o.handlers[route.id];
    let call: { record: CallRecord; ride: Ride } | null = null;
    if (route.mutating && route.readOnlyWhen?.(req.query) !== true) {
      // Issue 20: a follower does nothing for a write itself; issue 37: it forwards it to the leader named now.
      const follower = await followerAnswer(req);
      if (follower !== null) {
        for (const [name, value] of Object.entries(follower.headers)) reply.header(name, value);
        return reply.code(follower.status).type(follower.contentType).send(follower.body);
      }
      call = openCall(
        o.state.controller,
        callerOf,
        { method: route.method, route: `${API_BASE}${route.path}`, params: stringParams(req.params) },
        callIdOf(req.headers, () => randomBytes(16).toString("hex")),
      );
    }
    const ride = call?.ride ?? null;
    const commitRequest = async () => {
      await ride?.commit();
    };
    let status: number;
    let body: unknown;
    let outcome: CallOutcome;
    try {
      if (!handler) throw new ApiError(500, "not_implemented", `route ${route.id} has no handler`);
      // Parsing does nothing, so a refused request writes its pair in one transaction (the outcome's, below).
      const input = parseInputs(route, req);
      if (ride && !route.recordRides) {
        try {
          await ride.commit();
        } catch (error) {
          return unrecorded(req, reply, error);
        }
      }
      const ctx = { state: o.state, caller: callerOf, commitRequest };
      const answer = ride ? await ride.run(() => handler(input, ctx)) : await handler(input, ctx);
      status = answer.status ?? route.status;
      body = answer.body;
      outcome = {
        status,
        error: status >= 400 ? (answer.error ?? "failed") : null,
        ...(answer.refs ? { refs: answer.refs } : {}),
      };
    } catch (error) {
      // Issue 37: the store away (a PostgreSQL restart) is retryable, not a bare 500; what the call did is in the chain.
      const e =
        error instanceof ApiError
          ? error
          : isStoreAway(error)
            ? new ApiError(
                503,
                "store_unavailable",
                "the controller store did not answer while this request was handled (it may be restarting); check what was done (the audit chain, `berth instances`), then try again",
              )
            : new ApiError(500, "internal", "the server failed while handling this request; see its log");
      if (!(error instanceof ApiError)) req.log.error({ err: error }, "handler failed");
      status = e.status;
      body = e.body();
      outcome = { status, error: e.code, fields: e.extra.issues?.map((i) => i.path) ?? [] };
    }
    if (call && ride) {
      const { record } = call;
      try {
        // In the flow: when the call wrote nothing, this transaction carries the request too.
        await ride.run(() => recordOutcome(o.state.controller, callerOf, record, outcome));
      } catch (error) {
        req.log.error({ err: error, call_id: record.call_id }, "api.call outcome could not be chained");
      }
      try {
        await ride.finish();
      } catch (error) {
        req.log.error({ err: error, call_id: record.call_id }, "the store could not be synced before the answer");
      }
      // The request never committed, so no write of this call did either: nothing was done, and nothing may be said.
      if (!ride.committed) return unrecorded(req, reply, ride.failure);
    }
    if (route.produces === "application/x-ndjson" && status === 200)
      return reply
        .code(200)
        .type("application/x-ndjson; charset=utf-8")
        .send(body as string);
    if (route.produces === "text/plain" && status === 200)
      return reply
        .code(200)
        .type("text/plain; charset=utf-8")
        .send(body as string);
    if (route.produces === "application/octet-stream" && status === 200)
      return reply
        .code(200)
        .type("application/octet-stream")
        .send(body as Buffer);
    return send(reply, status, body);
  }

  function unrecorded(req: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
    req.log.error({ err: error }, "api.call request could not be chained; nothing was done");
    return send(reply, 500, {
      error: {
        code: "audit_unavailable",
        message: "the request could not be recorded in the audit chain, so nothing was done; try again",
      },
    });
  }

  function openStream(route: RouteSpec, req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    let input: Parsed;
    try {
      input = parseInputs(route, req);
    } catch (error) {
      return send(reply, (error as ApiError).status, (error as ApiError).body());
    }
    const last = parseLastEventId(req.headers["last-event-id"]);
    if (!last.ok)
      return send(reply, 400, {
        error: {
          code: "invalid_request",
          message: "headers.last-event-id: must be the seq of the last event received (a non-negative integer)",
          issues: [{ path: "headers.last-event-id", message: last.error }],
        },
      });
    for (const [name, value] of Object.entries(securityHeaders(false))) reply.raw.setHeader(name, value);
    reply.hijack();
    // A hijacked reply has no onResponse: its one line is written when the stream opens.
    logRequest(req, req.routeOptions.url ?? route.path, 200, reply.elapsedTime);
    streams.open(reply.raw, (input.query as { chain: "controller" | "k8s" }).chain, last.value);
    return undefined;
  }

  app.setNotFoundHandler((req, reply) => {
    const path = (req.raw.url ?? "/").split("?", 1)[0] ?? "/";
    const known = [...new Set(table.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (known.length > 0) {
      const allow = known.includes("GET") ? [...known, "HEAD"] : known;
      reply.header("allow", allow.join(", "));
      return send(reply, 405, {
        error: {
          code: "method_not_allowed",
          message: `${req.method} is not a method of this path; it answers ${allow.join(", ")}`,
        },
      });
    }
    // Never the dashboard's HTML for an API path: a probe or a client must see that the route does not exist.
    if (path === "/api" || path.startsWith("/api/"))
      return send(reply, 404, {
        error: {
          code: "not_found",
          message: `no route ${req.method} ${path.slice(0, 200)}; GET ${API_BASE}/openapi.json lists them`,
        },
      });
    if (req.method !== "GET" && req.method !== "HEAD") {
      reply.header("allow", "GET, HEAD");
      return send(reply, 405, { error: { code: "method_not_allowed", message: "the dashboard answers GET only" } });
    }
    const a = serveStatic(o.webRoot, req.url);
    return reply
      .code(a.status)
      .type(a.type)
      .header("cache-control", a.cache)
      .header("content-security-policy", DASHBOARD_CSP)
      .send(a.body);
  });

  app.setErrorHandler((error: { statusCode?: number; code?: string; message: string }, req, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 500) req.log.error({ err: error }, "request failed");
    const code =
      status === 413
        ? "payload_too_large"
        : status === 415
          ? "unsupported_media_type"
          : status < 500
            ? "invalid_request"
            : "internal";
    const message =
      status === 413
        ? `the body is larger than the server accepts (${bodyLimit} bytes)`
        : status === 415
          ? "the body must be JSON sent as Content-Type: application/json"
          : status < 500
            ? error.message
            : "the server failed while handling this request; see its log";
    return send(reply, status, { error: { code, message } });
  });

  // Authority-form (`CONNECT host:443`) never reaches fastify: node emits `connect`, and without a listener would just
  // drop the socket. Answer it as the refusal it is.
  app.server.on("connect", (_req, socket: import("node:net").Socket) => {
    const body = JSON.stringify({
      error: { code: "bad_request_target", message: "CONNECT (authority-form) is not served here" },
    });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });

  return { app, streams };
}

function listenPort(app: FastifyInstance): number | null {
  const address = app.server.address();
  return typeof address === "object" && address !== null ? address.port : null;
}
