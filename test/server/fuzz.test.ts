/**
 * Body parsing under fuzz (fast-check): whatever bytes or JSON arrive at POST /placements, POST /agents and
 * POST /nodes, the answer is a JSON error or success document — never a 500, never a crash — and the chain still
 * verifies afterwards.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_BASE } from "../../src/server/openapi.js";
import { type ApiFixture, apiFixture, closeFixtures } from "./support.js";

let fx: ApiFixture;
beforeAll(async () => {
  fx = await apiFixture();
});
afterAll(closeFixtures);

async function expectHandled(path: string, opts: { body?: unknown; raw?: string }): Promise<void> {
  const a = await fx.call("POST", `${API_BASE}${path}`, opts);
  const what = `${path} ${opts.raw ?? JSON.stringify(opts.body)} → ${a.status} ${a.text.slice(0, 300)}`;
  expect(a.status, what).toBeLessThan(500);
  expect(a.body, what).not.toBeNull();
  if (a.status >= 400) expect(typeof (a.body as { error?: { code?: unknown } }).error?.code, what).toBe("string");
}

/** Bodies shaped like the real ones, with any field replaced by anything. */
const placeLike = fc.record(
  {
    package: fc.oneof(fc.string(), fc.constant("/nonexistent/pkg"), fc.jsonValue()),
    name: fc.oneof(fc.string(), fc.constant("probe"), fc.jsonValue()),
    prefer: fc.jsonValue(),
    config: fc.jsonValue(),
  },
  { requiredKeys: [] },
);
const agentLike = fc.record(
  {
    apiVersion: fc.constantFrom("berth/v1", "berth/v2", 1),
    kind: fc.constantFrom("Agent", "Pod"),
    metadata: fc.oneof(fc.record({ name: fc.oneof(fc.constant("scout"), fc.string()) }), fc.jsonValue()),
    spec: fc.oneof(
      fc.record(
        {
          target: fc.constantFrom("mesh", "kubernetes", "moon"),
          package: fc.oneof(fc.constant("./missing"), fc.string()),
          config: fc.jsonValue(),
        },
        { requiredKeys: ["target"] },
      ),
      fc.jsonValue(),
    ),
  },
  { requiredKeys: [] },
);

describe("body parsing under fuzz", { timeout: 120_000 }, () => {
  it("POST /placements and POST /agents answer every JSON body without a 500", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(placeLike, fc.jsonValue()), agentLike, async (place, agent) => {
        await expectHandled("/placements", { body: place });
        await expectHandled("/agents", { body: agent });
      }),
      { numRuns: 150 },
    );
  });

  it("any bytes as a body are a 400 or a JSON answer, never a crash", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string(),
          fc.string({ unit: "binary" }),
          fc.jsonValue().map((v) => `${JSON.stringify(v)}}`),
        ),
        async (raw) => {
          for (const path of ["/nodes", "/placements/explain", "/agents"]) await expectHandled(path, { raw });
        },
      ),
      { numRuns: 150 },
    );
    expect((await fx.state.controller.store.chain.verifyStored()).ok).toBe(true);
  });
});
