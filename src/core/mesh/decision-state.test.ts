import { describe, expect, it } from "vitest";
import {
  DECISION_ACTORS,
  DECISION_EVENTS,
  DECISION_STATES,
  type DecisionActor,
  type DecisionEvent,
  type DecisionState,
  recoveryEventOf,
  transition,
} from "./decision-state.js";

/** The legal moves, written out by hand: `state event actor → target`. Every other triple must be refused. */
const LEGAL: Record<string, DecisionState> = {
  "dispatching placed owner": "placed",
  "dispatching next_candidate owner": "dispatching",
  "dispatching exhausted owner": "unplaced",
  "dispatching answer_lost owner": "reconciling",
  "dispatching owner_gone_in_flight recovery": "unsettled",
  "dispatching owner_gone_idle recovery": "unplaced",
  "reconciling reconciled owner": "dispatching",
  "reconciling exhausted owner": "unplaced",
  "reconciling not_reconciled owner": "unsettled",
  "reconciling owner_gone_in_flight recovery": "unsettled",
  "unsettled claim owner": "settling",
  "unsettled claim other": "settling",
  "unsettled repair operator": "placed",
  "unsettled forget operator": "unplaced",
  "settling adopt owner": "placed",
  "settling settle_empty owner": "unplaced",
  "settling release owner": "unsettled",
  "settling owner_gone_in_flight recovery": "unsettled",
};

describe("the decision state machine", () => {
  const triples: Array<[DecisionState, DecisionEvent, DecisionActor]> = [];
  for (const s of DECISION_STATES)
    for (const e of DECISION_EVENTS) for (const a of DECISION_ACTORS) triples.push([s, e, a]);

  it.each(triples)("in state %s the event %s by %s is legal exactly when the table lists it", (state, event, actor) => {
    const expected = LEGAL[`${state} ${event} ${actor}`];
    const verdict = transition(state, event, actor);
    if (expected === undefined) {
      expect(verdict.ok).toBe(false);
      if (!verdict.ok) expect(verdict.error).toMatch(new RegExp(`${event}`));
    } else {
      expect(verdict).toEqual({ ok: true, value: expected });
    }
  });

  it("placed and unplaced are final: no event by anyone moves a settled decision", () => {
    for (const s of ["placed", "unplaced"] as const)
      for (const e of DECISION_EVENTS) for (const a of DECISION_ACTORS) expect(transition(s, e, a).ok).toBe(false);
  });

  it("a decision a live owner holds is moved by nobody else but recovery", () => {
    for (const s of ["dispatching", "reconciling", "settling"] as const)
      for (const e of DECISION_EVENTS) expect(transition(s, e, "other").ok).toBe(false);
  });

  it("a reconciling decision cannot be adopted or settled empty, whoever asks (case 2 of issue 21)", () => {
    for (const e of ["adopt", "settle_empty", "claim"] as const)
      for (const a of DECISION_ACTORS) expect(transition("reconciling", e, a).ok).toBe(false);
  });

  it("recovery fires the in-flight event when a request may be out, the idle one otherwise, and nothing for a settled or unsettled decision", () => {
    expect(recoveryEventOf("dispatching", true)).toBe("owner_gone_in_flight");
    expect(recoveryEventOf("dispatching", false)).toBe("owner_gone_idle");
    expect(recoveryEventOf("reconciling", false)).toBe("owner_gone_in_flight");
    expect(recoveryEventOf("settling", false)).toBe("owner_gone_in_flight");
    for (const s of ["unsettled", "placed", "unplaced"] as const) expect(recoveryEventOf(s, true)).toBeNull();
  });
});
