/**
 * The placements this process is dispatching (issue 35): from the moment the engine picks a winner until the dispatch
 * ends, the winner is weighed by this process's next decisions as if the placement were made (core/placement/history.ts
 * `withInFlight`). The store counts a placement only once its node has answered, so the sixteen moves of a keep pass,
 * or the API's concurrent placements, otherwise all chose the one least-loaded node. In memory only: another
 * process's dispatches are its own, and a crash loses nothing the store keeps.
 */
import type { ClusterInstance } from "../../core/placement/index.js";

/** One winner held until its dispatch ends; `release` is idempotent. */
export interface HeldPlacement {
  release(): void;
}

export class InFlightPlacements {
  private readonly held = new Set<ClusterInstance>();

  /** `instance` (the winner's node, the workload's labels and memory) is being dispatched from now. */
  hold(instance: ClusterInstance): HeldPlacement {
    const entry = { ...instance };
    this.held.add(entry);
    return { release: () => void this.held.delete(entry) };
  }

  /** What is in flight now, as instances just placed. */
  list(): ClusterInstance[] {
    return [...this.held];
  }
}
