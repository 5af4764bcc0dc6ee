/**
 * The one shape of an agent deploy's outcome and its audit event (issue 7 §4), shared by both targets so that the same
 * spec deployed to Kubernetes and to the mesh reads the same to a person and to a program.
 *
 * Audit kind `agent.deploy` (source `placement` on the mesh controller's chain, `k8s` on the Kubernetes backend's
 * chain), one event per deploy outcome, payload:
 *   { agent, target, intent, ok, outcome, message, instance,
 *     row, action, fence,            // the classification row taken first, its action, and the fence a mutation used
 *     observation,                   // what was seen before the first decision
 *     rounds: [{ row, action, fence, observation }] }   // every observe → classify → act step, in order
 * Never in it: env values, the nsec, package contents, log output.
 */
import type { JsonObject, JsonValue } from "../crypto/canonical.js";

export const DEPLOY_TARGETS = ["mesh", "kubernetes"] as const;
export type DeployTarget = (typeof DEPLOY_TARGETS)[number];

/** What happened, in the same words on both targets. */
export type DeployOutcomeKind =
  /** The agent was already running: nothing was done (the same spec twice is a no-op). */
  | "unchanged"
  /** A new instance was started (first deploy, or after the previous one terminated or was cleared). */
  | "started"
  /** Loaded or created but not started yet, with the same spec: left alone. */
  | "waiting"
  /** Nothing was done because something must resolve first (an unsettled decision, a silent node, a pending stop). */
  | "blocked"
  /** Two live instances: reported, the older kept, nothing killed. */
  | "duplicates"
  /** Refused or failed; nothing is known to have changed beyond what `rounds` shows. */
  | "failed";

export interface DeployRound {
  readonly row: string;
  readonly action: string;
  readonly fence: JsonObject | null;
  readonly observation: JsonObject;
}

export interface AgentDeployResult {
  readonly agent: string;
  readonly target: DeployTarget;
  readonly intent: string;
  readonly ok: boolean;
  readonly outcome: DeployOutcomeKind;
  /** One sentence for people: what happened, why, and what to do next. */
  readonly message: string;
  /** The instance (mesh instance id or pod name) that runs the agent now, when one does. */
  readonly instance: string | null;
  /** Set when the spec differs from what the running instance was started with. */
  readonly pendingEdit: boolean;
  readonly rounds: readonly DeployRound[];
  /** Who acted when it was not a person: `berth serve`'s keep loop (issue 16). Absent for a verb. */
  readonly by?: JsonObject;
}

/**
 * The answer builder a deploy of one agent returns through: the agent, target, intent and the rounds seen so far are
 * fixed; each return names how it ended. `rounds` is shared, so rounds pushed later are in every answer built after.
 */
export function deployAnswers(
  base: Pick<AgentDeployResult, "agent" | "target" | "intent"> & { readonly rounds: readonly DeployRound[] },
) {
  return (
    ok: boolean,
    outcome: DeployOutcomeKind,
    message: string,
    instance: string | null = null,
    pendingEdit = false,
  ): AgentDeployResult => ({
    ...base,
    ok,
    outcome,
    message,
    instance,
    pendingEdit,
  });
}

export function deployEventPayload(r: AgentDeployResult): JsonObject {
  const first = r.rounds[0];
  const fenced = r.rounds.find((x) => x.fence !== null);
  return {
    agent: r.agent,
    target: r.target,
    intent: r.intent,
    ok: r.ok,
    outcome: r.outcome,
    message: r.message,
    instance: r.instance,
    pending_edit: r.pendingEdit,
    row: first?.row ?? null,
    action: first?.action ?? null,
    fence: fenced?.fence ?? null,
    observation: first?.observation ?? null,
    rounds: r.rounds.map(
      (x) => ({ row: x.row, action: x.action, fence: x.fence, observation: x.observation }) as JsonValue,
    ),
    ...(r.by !== undefined ? { by: r.by } : {}),
  };
}

export function deployEventDraft(r: AgentDeployResult): { source: string; kind: string; payload: JsonObject } {
  return { source: r.target === "mesh" ? "placement" : "k8s", kind: "agent.deploy", payload: deployEventPayload(r) };
}

/** The closing sentence for a running agent whose spec was edited (the same on both targets). */
export function pendingEditNote(instance: string): string {
  return `the spec changed, but ${instance} is running: the change takes effect after it stops (berth agent stop), or now with berth agent replace`;
}

/** The one-word state of an agent on its target, from the row a deploy would take now (same words on both targets). */
export function agentStateOf(row: string): string {
  switch (row) {
    case "started":
      return "running";
    // Issue 36 item 9: an ended instance reads `stopped`, the word berth's verbs and the node's LIFECYCLE use (the
    // row keeps the classifier's `terminated`; LIFECYCLE says how it ended: stopped, exited, failed, finished …).
    case "terminated":
      return "stopped";
    case "never-started-same-intent":
    case "never-started-diverged-intent":
      return "not started";
    case "no-instance":
      return "absent";
    case "going-away":
      return "going away";
    case "unsettled-decision":
      return "unsettled";
    case "instance-unobservable":
      return "unreachable";
    case "two-live-instances":
      return "DUPLICATED";
    case "pull-failing":
      return "pull failing";
    case "provably-broken":
      return "broken";
    default:
      return row;
  }
}
