import { describe, expect, it } from "vitest";
import { engineHarness } from "../../../test/support/engines.js";
import { PLAIN_WORKLOAD } from "../../../test/support/workload.js";
import { EngineChain } from "../../chain/engine-chain.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import { observedInstanceOf } from "../../core/mesh/instance-observation.js";
import type { EngineKind } from "../../store/engine.js";
import { ControllerStore, type PlacementRecord } from "./store.js";
import { CONTROLLER_SCHEMA_VERSION } from "./store-schema.js";

/** Both engines (issue 35, schema v12): the PostgreSQL tier never skips (test/support/postgres.ts). */
const harness = engineHarness();
const KEY = signingKeyFromSeed(new Uint8Array(32).fill(3));
const clock = () => 1_767_225_600_000;
const NODE = "d".repeat(32);

describe.each(["sqlite", "postgres"] as const)(
  "instance observations in the controller store on %s",
  { timeout: 60_000 },
  (kind: EngineKind) => {
    async function open() {
      const engine = await harness.open(kind);
      const chain = await EngineChain.open(engine, KEY, "controller", clock);
      return { engine, store: await ControllerStore.open(engine, chain, clock) };
    }

    it("a store at controller schema v11 migrates to v12 on open: the observations table appears, empty, every other row kept", async () => {
      const { engine } = await open();
      // A v11 store: today's tables less v12's, its version recorded as 11.
      await engine.transaction(async (tx) => {
        await tx.exec("DROP TABLE mesh_observations");
        await tx.run("UPDATE berth_schema SET version = 11 WHERE component = 'mesh_controller'");
        await tx.run(
          "INSERT INTO mesh_targets (addr, node_id, key, tier, tier_source, learned_ms) VALUES ('h:1', ?, 'k', 'paired', 'cli', 5)",
          [NODE],
        );
      });
      const again = await harness.reopen(engine);
      const store = await ControllerStore.open(again, await EngineChain.open(again, KEY, "controller", clock), clock);
      expect(
        Number(
          (
            await again.read((q) =>
              q.get<{ version: number }>("SELECT version FROM berth_schema WHERE component = 'mesh_controller'"),
            )
          )?.version,
        ),
      ).toBe(CONTROLLER_SCHEMA_VERSION);
      expect(CONTROLLER_SCHEMA_VERSION).toBe(12);
      expect(await store.observations()).toEqual(new Map());
      expect((await store.targets()).map((t) => t.addr)).toEqual(["h:1"]);
    });

    it("a later observation replaces an earlier one, an earlier one recorded after it is dropped, and an ended placement takes its observation with it", async () => {
      const { store } = await open();
      const id = await store.commitDecision({
        name: "scout",
        packageId: PLAIN_WORKLOAD.package_id,
        workload: PLAIN_WORKLOAD,
        dispatch: true,
        event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name: "scout" } },
        refusal: (error) => ({
          source: "placement",
          kind: "workload.refuse",
          payload: { phase: "decision", name: "scout", error },
        }),
      });
      const placement: PlacementRecord = {
        instance_id: "scout-000000000001",
        name: "scout",
        node_id: NODE,
        decision_id: id,
        variant: "v",
        route: "native",
        package_id: PLAIN_WORKLOAD.package_id,
        placed_ms: 1,
        adopted: false,
        pending: null,
      };
      await store.beginAttempt(id, 1, NODE, "v");
      await store.commitPlaced(id, 1, placement, PLAIN_WORKLOAD, {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "placed" },
      });

      const running = observedInstanceOf(
        placement.instance_id,
        NODE,
        { state: "running", restarts: 2, pid: 4242, started_ms: 90 },
        2_000,
      );
      await store.recordObservations([running]);
      expect(await store.observations()).toEqual(new Map([[placement.instance_id, running]]));
      // Another process's older answer, recorded late, does not overwrite what was seen later.
      await store.recordObservations([observedInstanceOf(placement.instance_id, NODE, { state: "starting" }, 1_000)]);
      expect((await store.observations()).get(placement.instance_id)).toEqual(running);
      const stopped = observedInstanceOf(placement.instance_id, NODE, { state: "stopped", pid: null }, 3_000);
      await store.recordObservations([stopped]);
      expect((await store.observations()).get(placement.instance_id)).toEqual(stopped);

      await store.commitVerbOutcome(placement.instance_id, "remove", {
        source: "placement",
        kind: "workload.unload",
        payload: { phase: "outcome" },
      });
      expect(await store.observations()).toEqual(new Map());
    });
  },
);
