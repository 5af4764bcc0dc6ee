/**
 * What the Kubernetes shell offers the rest of berth (the CLI, the API server, `src/agents`). Importing this file does
 * not load `@kubernetes/client-node`: only `connect` does, when it first runs.
 *
 * - `deploy` — one converge call for one agent (converge.ts, spec/kubernetes.md §8), with its inputs, deps, budget
 *   and report types.
 * - `prepareDeploy` — stages 4–9 of §3.2 for callers other than the provider protocol.
 * - the operator verbs `status`, `list`, `stop`, `clearForReplace` and the replace audit pair (§16), and `look`, the
 *   one pod observation (observe.ts) they share with the loop.
 * - `handleProviderRequest` / `runProviderProcess` — Buzz's provider protocol (§3).
 * - `openK8sChain`, `MemoryAudit` — the standalone `k8s.*` audit chain (§17); `storeAudit` — the same records on a
 *   PostgreSQL controller store's chain (issue 20); `connect` — a `Cluster` from the kubeconfig; `realClock`,
 *   `settingsFromEnv`, loggers.
 */
export { type K8sAudit, type K8sChainName, type K8sKind, MemoryAudit, openK8sChain } from "./audit.js";
export type { Cluster, RequestOptions } from "./cluster.js";
export { type Clock, realClock } from "../kit/clock.js";
export { type Connection, connect } from "./connect.js";
export { boundedStderrLogger, type Logger, memoryLogger, silentLogger } from "../kit/log.js";
export { type Observation, observePod } from "./observe.js";
export { type Prepared, prepareDeploy } from "./prepare.js";
export { storeAudit } from "./store-audit.js";
export { handleProviderRequest, type ProviderDeps, type ProviderResult } from "./provider.js";
export { providerHome, runProviderProcess } from "./provider-process.js";
export {
  type DeployAnswer,
  type DeployBudget,
  type DeployDeps,
  type DeployInputs,
  type DeployMode,
  type DeployReport,
  deploy,
  type Progress,
} from "./converge.js";
export { type K8sSettings, settingsFromEnv } from "./settings.js";
export {
  type AgentRef,
  clearForReplace,
  type ListRow,
  list,
  look,
  replaceAuditEnd,
  replaceAuditStart,
  type StatusReport,
  startupLabel,
  status,
  stop,
  type VerbDeps,
  type VerbOutcome,
} from "./verbs.js";
export { DEFAULT_WAIT, type WaitSettings } from "./waiter.js";
