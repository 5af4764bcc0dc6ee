/** The `agent.deploy` payload keys, the same on both targets (core/agents/deploy-event.ts). */
export const DEPLOY_EVENT_KEYS = [
  "agent",
  "target",
  "intent",
  "ok",
  "outcome",
  "message",
  "instance",
  "pending_edit",
  "row",
  "action",
  "fence",
  "observation",
  "rounds",
] as const;
