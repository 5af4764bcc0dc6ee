/**
 * The OpenAPI 3.1 document, generated from the route table and its zod schemas (`contract.ts`) with zod's own
 * `z.toJSONSchema`: what the server validates is what the document says. Pure; `openapi-write.ts` writes it to
 * docs/api/openapi.json, and a test fails when the committed file and this function drift.
 */
import { z } from "zod";
import { ErrorSchema, ROUTES } from "./contract.js";
import type { RouteSpec } from "./route-spec.js";

export const API_BASE = "/api/v1";
export const OPENAPI_FILE = "docs/api/openapi.json";
export const OPENAPI_WRITE_COMMAND = "npm run build && node dist/src/server/openapi-write.js";

type JsonSchema = Record<string, unknown>;

function schemaOf(t: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(t, {
    io,
    unrepresentable: "any",
    target: "draft-2020-12",
  }) as JsonSchema;
  return rest;
}

function parametersOf(r: RouteSpec): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const [where, obj] of [
    ["path", r.params],
    ["query", r.query],
  ] as const) {
    if (!obj) continue;
    const shape = schemaOf(obj, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(shape.properties ?? {})) {
      out.push({ name, in: where, required: where === "path" || (shape.required ?? []).includes(name), schema });
    }
  }
  return out;
}

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

const ERROR_TEXT: Record<number, string> = {
  400: "invalid_request (the message and issues name the field), or before anything else bad_request_target / non_canonical_path: the target is not one path spelled as written here",
  401: "unauthorized: missing, malformed or wrong bearer token",
  404: "not_found",
  413: "payload_too_large: the body is over 1 MiB",
  415: "unsupported_media_type: a body must be Content-Type: application/json",
  421: "misdirected_host: the Host header does not name this server (its listen address, localhost, or an --allowed-host name)",
  409: "conflict (name_taken, k8s_not_configured, …)",
  422: "the request was understood but berth refused it (the message says why)",
  500: "audit_unavailable: the request could not be chained, so nothing was done",
  502: "a node or the cluster did not answer",
  503: "store_interrupted: the controller store failed mid-dispatch; the decision is left for settle (retry), or not_leader on a follower",
};

function operationOf(r: RouteSpec): JsonSchema {
  const contentType = r.produces ?? "application/json";
  const responses: Record<string, unknown> = {
    [String(r.status)]: {
      description: "success",
      content: { [contentType]: { schema: r.produces ? { type: "string" } : schemaOf(r.response, "output") } },
    },
  };
  // Every route can answer the edge's refusals (src/server/edge.ts): 400 for the target, 421 for the Host.
  const codes = [
    400,
    421,
    ...(r.public ? [] : [401]),
    ...(r.body ? [413, 415] : []),
    ...(r.errors ?? []),
    ...(r.mutating ? [500] : []),
  ];
  for (const code of [...new Set(codes)].sort((a, b) => a - b))
    responses[String(code)] = errorResponse(ERROR_TEXT[code] ?? "error");
  const op: JsonSchema = { operationId: r.id, summary: r.summary, tags: [r.tag], responses };
  const parameters = parametersOf(r);
  if (parameters.length > 0) op.parameters = parameters;
  if (r.body)
    op.requestBody = { required: true, content: { "application/json": { schema: schemaOf(r.body, "input") } } };
  if (r.public) op.security = [];
  if (r.mutating) op["x-berth-audited"] = "chained as api.call request/outcome on the controller chain";
  return op;
}

export function openApiDocument(version: string): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    const path = `${API_BASE}${r.path}`;
    paths[path] ??= {};
    (paths[path] as Record<string, unknown>)[r.method.toLowerCase()] = operationOf(r);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "berth API",
      version,
      description:
        "berth's control plane over HTTP: nodes, packages, placements, instances, unsettled decisions, agents on the mesh and on Kubernetes, and the signed audit chain. Every route but health, this document and the dashboard files needs `Authorization: Bearer <token>` (the token is in $BERTH_HOME/api.token). Every mutating call is chained as an `api.call` request/outcome pair on the controller chain. Before any route: the request target must be a path spelled as written here (400 bad_request_target, non_canonical_path) and the Host must name this server (421 misdirected_host); an unknown path under /api is 404 not_found and a known path with another method 405 method_not_allowed with Allow; a body must be application/json (415) of at most 1 MiB (413). Refusals before a route's handler are never chained. Outside /api/v1: GET /healthz and GET /readyz (public), GET /metrics (Prometheus text, needs the token); see docs/api.md.",
    },
    servers: [{ url: "http://127.0.0.1:7420" }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { Error: schemaOf(ErrorSchema, "output") },
    },
    paths,
  };
}

export function openApiText(version: string): string {
  return `${JSON.stringify(openApiDocument(version), null, 2)}\n`;
}
