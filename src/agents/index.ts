/**
 * What `src/agents` offers (issue 7's one deploy over both targets; issue 14.1's home for it). Callers build an
 * `AgentsEnv` (the registry, the mesh controller session, the way to a cluster) and call the use cases; every
 * expected failure comes back as a value whose `kind` the caller maps to its exit code or HTTP status.
 *
 *   use cases     deploy.ts (deploy, replace) · status.ts (states) · verbs.ts (stop, start, delete, logs)
 *   one type      target.ts: AgentTarget, Outcome, AgentFailure · env.ts: AgentsEnv, targetFor
 *   adapters      targets/mesh/ · targets/kubernetes/ (each with its index.ts)
 *   around them   spec-file.ts (read a spec) · registry.ts (the controller store's agent_registry) · audit.ts (agent.deploy) · state.ts
 */
export { recordKubernetesDeploy, recordMeshDeploy } from "./audit.js";
export { deployAgent, planDeploy, replaceAgent } from "./deploy.js";
export { agentHistory, type HistoryAnswer, type HistoryRevision, rollbackAgent } from "./history.js";
export { type AgentsEnv, targetFor } from "./env.js";
export type { ClusterReach, KubernetesAccess, MeshAccess } from "./access.js";
export { knownAgent, listAgents } from "./lookup.js";
export { AGENTS_DB, type AgentRecord, AgentRegistry } from "./registry.js";
export { type LoadedSpec, loadSpecFile, meshIntentOf, readNsec, specFromText } from "./spec-file.js";
export { type AgentState, unknownAgentState } from "./state.js";
export { agentLabels, agentState, agentStates } from "./status.js";
export { selectedRecords } from "./selected.js";
export { storedAgentStates } from "./stored-states.js";
export type {
  AgentFailure,
  AgentTarget,
  DeployDone,
  FailureMap,
  KnownAgent,
  LogsAnswer,
  Outcome,
  StopAnswer,
  Watch,
} from "./target.js";
export { translateFailure, unwrap } from "./target.js";
export { cliBudget, loopDeps, runConvergeLoop } from "./targets/kubernetes/index.js";
export type { MeshAgentDeps } from "./targets/mesh/index.js";
export { agentLogs, type DeleteAnswer, deleteAgent, purgeAgent, startAgent, stopAgent } from "./verbs.js";
