/**
 * The API's audit routes on a PostgreSQL controller store (issue 20): the chain is read through the server's mirror
 * (src/chain/mirror.ts), sees what another process appended to the same database, and verifies under its owner key.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MeshController } from "../../src/mesh/controller/index.js";
import { MemoryConnector } from "../../src/mesh/transport/memory.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";
import { type ApiFixture, apiFixture } from "./support.js";
import { API_BASE } from "../../src/server/openapi.js";

let pg: TestPostgres;
let fx: ApiFixture | null = null;
beforeAll(async () => {
  pg = await startPostgres();
}, 120_000);
afterEach(async () => {
  await fx?.close();
  fx = null;
});
afterAll(async () => {
  await pg?.stop();
});

describe("the audit routes on a PostgreSQL store", { timeout: 60_000 }, () => {
  it("list, page, export and verify the controller chain, including events another process appended meanwhile", async () => {
    const database = await pg.database();
    fx = await apiFixture({ database });
    const chains = (await fx.call("GET", `${API_BASE}/audit/chains`)).body as {
      chains: Array<{ name: string; events: number }>;
    };
    const before = chains.chains.find((c) => c.name === "controller")?.events ?? 0;
    expect(before).toBeGreaterThan(0);

    // Another process on the same database (a CLI verb, a second `berth serve`) appends: the server must see it.
    const other = await MeshController.open({
      dataDir: fx.dir,
      database,
      key: fx.state.key,
      connector: new MemoryConnector(),
    });
    try {
      await other.store.appendAll([
        { source: "trust", kind: "peer.tier", payload: { node: "elsewhere", tier: "paired", source: "cli" } },
      ]);
    } finally {
      await other.close();
    }
    const page = (await fx.call("GET", `${API_BASE}/audit/events?chain=controller&after=-1&limit=1000`)).body as {
      events: Array<{ kind: string; payload: { node?: string } }>;
      head: number;
    };
    expect(page.events.some((e) => e.kind === "peer.tier" && e.payload.node === "elsewhere")).toBe(true);
    expect(page.head + 1).toBe(page.events.length);
    const verify = (await fx.call("GET", `${API_BASE}/audit/verify?chain=controller`)).body as {
      ok: boolean;
      events: number;
      owner_key: string;
    };
    expect(verify).toMatchObject({ ok: true, events: page.events.length });
    const exported = (await fx.call("GET", `${API_BASE}/audit/export?chain=controller`)).text.trim().split("\n");
    expect(exported).toHaveLength(page.events.length);
  });

  it("answers a request for the k8s chain with where the Kubernetes records are on this store", async () => {
    fx = await apiFixture({ database: await pg.database() });
    const k8s = await fx.call("GET", `${API_BASE}/audit/events?chain=k8s&after=-1&limit=10`);
    expect(k8s.status).toBe(404);
    expect(k8s.text).toContain("on a PostgreSQL store the Kubernetes records are in the controller chain (source k8s)");
  });
});
