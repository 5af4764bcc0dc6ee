/**
 * The operator's routes outside `/api/v1` (issue 13, Operable; docs/api.md "Health and metrics"):
 *
 *   GET /healthz   public  the process answers                         200 {ok, version}
 *   GET /readyz    public  the chain is open and the store is writable 200 {ready:true, checks} | 503 {ready:false, checks}
 *   GET /metrics   token   Prometheus text (metrics.ts)
 *
 * The probes are public because a kubelet's or a load balancer's httpGet carries no secret, and they say nothing
 * but up/ready and which check failed; the metrics need the token, as Prometheus sends it (`authorization:
 * credentials_file`), because they describe the fleet.
 */
import type { FastifyInstance } from "fastify";
import type { ServerMetrics } from "./metrics.js";
import { readiness } from "./readiness.js";
import type { ServerState } from "./state.js";

export type Access = "public" | "token";

export const OPS_ROUTES: ReadonlyArray<{ readonly method: "GET"; readonly url: string; readonly access: Access }> = [
  { method: "GET", url: "/healthz", access: "public" },
  { method: "GET", url: "/readyz", access: "public" },
  { method: "GET", url: "/metrics", access: "token" },
];

export function registerOps(app: FastifyInstance, o: { state: ServerState; metrics: ServerMetrics }): void {
  const access = (url: string) => OPS_ROUTES.find((r) => r.url === url)?.access ?? "token";
  app.get("/healthz", { config: { access: access("/healthz") } }, async (_req, reply) =>
    reply
      .code(200)
      .type("application/json; charset=utf-8")
      .send(JSON.stringify({ ok: true, version: o.state.version })),
  );
  app.get("/readyz", { config: { access: access("/readyz") } }, async (_req, reply) => {
    const r = await readiness(o.state);
    const status = r.ready ? 200 : 503;
    return reply
      .code(status)
      .type("application/json; charset=utf-8")
      .header("cache-control", "no-store")
      .send(JSON.stringify(r));
  });
  app.get("/metrics", { config: { access: access("/metrics") } }, async (_req, reply) => {
    const text = await o.metrics.registry.metrics();
    return reply.code(200).type(o.metrics.registry.contentType).header("cache-control", "no-store").send(text);
  });
}
