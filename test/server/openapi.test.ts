/**
 * The committed OpenAPI document (docs/api/openapi.json) is exactly what the route schemas generate, and every route
 * the server registers is in it: CI fails when they drift, with the command that regenerates it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { berthVersion } from "../../src/version.js";
import { ROUTES } from "../../src/server/contract.js";
import {
  API_BASE,
  OPENAPI_FILE,
  OPENAPI_WRITE_COMMAND,
  openApiDocument,
  openApiText,
} from "../../src/server/openapi.js";
import { repoRoot } from "../support/built.js";
import { apiFixture, closeFixtures } from "./support.js";

describe("the OpenAPI document", () => {
  it("committed at docs/api/openapi.json is the one the route schemas generate", () => {
    const committed = readFileSync(join(repoRoot, OPENAPI_FILE), "utf8");
    const generated = openApiText(berthVersion());
    if (committed !== generated) {
      expect.fail(
        `${OPENAPI_FILE} is out of date with src/server/contract.ts; regenerate it with \`${OPENAPI_WRITE_COMMAND}\` and commit it`,
      );
    }
  });

  it("lists every route once, with the contract's paths, and marks the public ones", () => {
    const doc = openApiDocument("x") as {
      paths: Record<string, Record<string, { operationId: string; security?: unknown[] }>>;
    };
    const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([m, op]) => `${m.toUpperCase()} ${path} ${op.operationId}`),
    );
    expect(ops.sort()).toEqual(ROUTES.map((r) => `${r.method} ${API_BASE}${r.path} ${r.id}`).sort());
    for (const path of [
      "/agents",
      "/k8s/agents",
      "/placements/explain",
      "/unsettled/settle",
      "/audit/stream",
      "/instances/{id}/logs",
    ])
      expect(doc.paths[`${API_BASE}${path}`], path).toBeDefined();
    expect(doc.paths[`${API_BASE}/health`]?.get?.security).toEqual([]);
    expect(doc.paths[`${API_BASE}/nodes`]?.get?.security).toBeUndefined();
  });

  it("is served at /api/v1/openapi.json as generated", async () => {
    const fx = await apiFixture();
    try {
      const a = await fx.call("GET", `${API_BASE}/openapi.json`, { token: null });
      expect(a.body).toEqual(openApiDocument("test"));
    } finally {
      await closeFixtures();
    }
  });
});
