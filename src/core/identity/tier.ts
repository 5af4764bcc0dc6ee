/**
 * A node's tier (spec/mesh.md §3.4): how far the operator trusts a node's key, assigned on the controller's side and
 * never self-asserted. Ordered: `discovered < paired < pinned`. The one home of the name; the gate, the placement
 * engine, the controller's store and the API all read it from here.
 */
export const TIERS = ["discovered", "paired", "pinned"] as const;
export type Tier = (typeof TIERS)[number];
export const TIER_RANK: Readonly<Record<Tier, number>> = { discovered: 0, paired: 1, pinned: 2 };
