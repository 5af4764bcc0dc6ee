/**
 * The life of a placement decision (spec/mesh.md §9–§10, §14.2; issue 21): which state a decision may move to, on
 * which event, by whom. Pure: the store asks `transition` inside the transaction that would write the new state and
 * refuses the write (a typed `IllegalTransition`) when the answer is not `ok`.
 *
 *                    placed ◀──────── adopt ────────┐
 *                      ▲                             │
 *   dispatching ──placed┘        unsettled ──claim──▶ settling ──release──▶ unsettled
 *      │  ▲                          ▲                │
 *   answer_lost  reconciled          │                └──settle_empty──▶ unplaced
 *      ▼  │                          │
 *   reconciling ──not_reconciled─────┘          exhausted (dispatching | reconciling) ──▶ unplaced
 *
 *   owner_gone (recovery only): dispatching ─▶ unplaced (nothing was sending) or unsettled (a request may be out);
 *                               reconciling, settling ─▶ unsettled.
 *   repair (operator only, `berth doctor`): unsettled ─▶ placed, when a placement already records the decision.
 *   forget (operator only, `berth node forget`): unsettled ─▶ unplaced, its node declared dead for good.
 *
 * Structural rules (the causes of issue 21's cases 1, 2 and 6):
 * - a decision in `dispatching`, `reconciling` or `settling` belongs to one live owner: only that owner moves it,
 *   and nobody else may settle it; a live non-owner's event is refused whatever it is;
 * - only recovery (the owner is provably gone) may interrupt an owned decision, so "controller restarted …
 *   interrupted" is never written while the owner is alive;
 * - `placed` and `unplaced` are final: nothing moves a settled decision back to `unsettled` (the wedge of case 2).
 */
import type { Result } from "../../kit/result.js";

export const DECISION_STATES = ["dispatching", "reconciling", "unsettled", "settling", "placed", "unplaced"] as const;
export type DecisionState = (typeof DECISION_STATES)[number];

export const DECISION_EVENTS = [
  "placed",
  "next_candidate",
  "answer_lost",
  "reconciled",
  "not_reconciled",
  "exhausted",
  "claim",
  "adopt",
  "settle_empty",
  "release",
  "owner_gone_in_flight",
  "owner_gone_idle",
  "repair",
  "forget",
] as const;
export type DecisionEvent = (typeof DECISION_EVENTS)[number];

/**
 * Who asks: the decision's own live owner, another live owner (a second CLI process, the server), recovery (the
 * owner was judged provably gone, see owner-liveness.ts), or the operator through `berth doctor`.
 */
export const DECISION_ACTORS = ["owner", "other", "recovery", "operator"] as const;
export type DecisionActor = (typeof DECISION_ACTORS)[number];

/** States a live owner holds: while one is in it, nobody else touches the decision. */
export const OWNED_STATES: ReadonlySet<DecisionState> = new Set(["dispatching", "reconciling", "settling"]);
/** States that reserve the name (the store's partial unique index). */
export const OPEN_STATES: readonly DecisionState[] = ["dispatching", "reconciling", "unsettled", "settling"];

export type TransitionVerdict = Result<DecisionState>;

interface Rule {
  readonly from: DecisionState;
  readonly event: DecisionEvent;
  readonly to: DecisionState;
  readonly by: readonly DecisionActor[];
}

/** The whole machine: every legal (state, event) pair, its target and who may fire it. Anything else is refused. */
const RULES: readonly Rule[] = [
  { from: "dispatching", event: "placed", to: "placed", by: ["owner"] },
  { from: "dispatching", event: "next_candidate", to: "dispatching", by: ["owner"] },
  { from: "dispatching", event: "exhausted", to: "unplaced", by: ["owner"] },
  { from: "dispatching", event: "answer_lost", to: "reconciling", by: ["owner"] },
  { from: "dispatching", event: "owner_gone_in_flight", to: "unsettled", by: ["recovery"] },
  { from: "dispatching", event: "owner_gone_idle", to: "unplaced", by: ["recovery"] },
  { from: "reconciling", event: "reconciled", to: "dispatching", by: ["owner"] },
  { from: "reconciling", event: "exhausted", to: "unplaced", by: ["owner"] },
  { from: "reconciling", event: "not_reconciled", to: "unsettled", by: ["owner"] },
  { from: "reconciling", event: "owner_gone_in_flight", to: "unsettled", by: ["recovery"] },
  // Any live process may take an unsettled decision to settle it; the store's transaction lets exactly one win.
  { from: "unsettled", event: "claim", to: "settling", by: ["owner", "other"] },
  { from: "unsettled", event: "repair", to: "placed", by: ["operator"] },
  // Issue 16: `berth node forget` declares its node dead for good; what it may hold is released on the operator's word.
  { from: "unsettled", event: "forget", to: "unplaced", by: ["operator"] },
  { from: "settling", event: "adopt", to: "placed", by: ["owner"] },
  { from: "settling", event: "settle_empty", to: "unplaced", by: ["owner"] },
  { from: "settling", event: "release", to: "unsettled", by: ["owner"] },
  { from: "settling", event: "owner_gone_in_flight", to: "unsettled", by: ["recovery"] },
];

export function transition(from: DecisionState, event: DecisionEvent, actor: DecisionActor): TransitionVerdict {
  const rule = RULES.find((r) => r.from === from && r.event === event);
  if (!rule) return { ok: false, error: `a decision in state ${from} cannot take the event ${event}` };
  if (!rule.by.includes(actor)) {
    const who = rule.by.join(" or ");
    return {
      ok: false,
      error: `${event} of a decision in state ${from} is for its ${who}, not for ${actorText(actor)}`,
    };
  }
  return { ok: true, value: rule.to };
}

function actorText(actor: DecisionActor): string {
  switch (actor) {
    case "owner":
      return "its owner";
    case "other":
      return "another live process";
    case "recovery":
      return "crash recovery";
    case "operator":
      return "the operator";
    default: {
      const never: never = actor;
      return never;
    }
  }
}

/** The event recovery fires for a decision whose owner is gone, or null when it holds nothing to recover. */
export function recoveryEventOf(state: DecisionState, requestMayBeOut: boolean): DecisionEvent | null {
  if (state === "dispatching") return requestMayBeOut ? "owner_gone_in_flight" : "owner_gone_idle";
  if (state === "reconciling" || state === "settling") return "owner_gone_in_flight";
  return null;
}

export function isDecisionState(s: string): s is DecisionState {
  return (DECISION_STATES as readonly string[]).includes(s);
}
