/**
 * What the keep loop of `berth serve` (src/serve/mesh/) needs of the controller, as `MeshController.keepAccess()`
 * provides it: kept beside the controller so the controller names nothing of the loop above it.
 */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { NodeView } from "../../core/mesh/keep.js";
import type { CallResult } from "../client/node-client.js";
import type { MoveRecords } from "./move-records.js";
import type { MoverDeps } from "./mover.js";
import type { ControllerStore, PlacementRecord } from "./store.js";
import type { Verb, VerbOptions, VerbResult } from "./verbs.js";
import type { NodeStamps } from "./watch-stamps.js";

/** What the ports need of the controller; `MeshController.keepAccess()` provides it. */
export interface KeepAccess {
  readonly clock: () => number;
  placements(): Promise<readonly PlacementRecord[]>;
  /**
   * What the keep loop judges by of the `order` of the chained decision event (`restart`, `pin`), or null when the chain
   * has none (issue 35: kept between passes, so not the whole order).
   */
  chainedOrder(decisionId: string): Promise<JsonObject | null>;
  /** Issue 35: `chainedOrder` of many decisions at once (a pass's placements), parsed once per decision. */
  chainedOrders(decisionIds: readonly string[]): Promise<ReadonlyMap<string, JsonObject | null>>;
  /** The node's liveness judged from the store now, and when a silent node will be judged dead (issue 35). */
  liveness(nodeId: string): Promise<Pick<NodeView, "liveness" | "dead_at_ms">>;
  stamps(nodeId: string): Promise<NodeStamps>;
  status(nodeId: string): Promise<CallResult<"status">>;
  instance(verb: Verb, instanceId: string, opts: VerbOptions): Promise<VerbResult>;
  append(draft: { source: string; kind: string; payload: JsonObject }): Promise<void>;
  /** Issue 16: the records and shell of moving agents. */
  readonly moves: MoveRecords;
  readonly mover: MoverDeps;
  readonly store: ControllerStore;
  /** The package's declared `migratable`/`sticky` (null when its manifest cannot be read: never moved then). */
  packagePolicy(packageId: string): { migratable: boolean; sticky: boolean } | null;
}
