/**
 * What the Kubernetes core offers (pure decisions, no I/O; see README.md for the flow and the file map):
 *
 * - the request and its refusals: `parseRequest`, `parseProviderConfig`, `buildEnv`, `identityFromNsec`, the
 *   `configSchema` Buzz Desktop renders, the answer `catalogue`;
 * - the observation: `decodeStartup` (startup from status), `verifyPod` (the only way to a `VerifiedPod` and a `Fence`);
 * - the decisions: `classify` (the eight rows of §7), `loopStep` and `loserStep` (the loop's one-attempt rule and the
 *   race loser's table, §8.7–§8.8), `planGc` (§11), `fingerprint` (the create intent, §9);
 * - the objects written: `podManifest`, `secretManifest`, `claimManifest`, `namespaceManifest`, names and labels.
 *
 * Deliberately not re-exported: `user-authority.ts` (only the verb layer mints user delete authority) and
 * `quorum.ts`'s `fromQuorumRead` (only Cluster adapters mint a `QuorumPod`).
 */
export { type ApiError, describeApiError } from "./api-status.js";
export { catalogue } from "./catalogue.js";
export { type Action, classify, type DeleteAction, type DeleteCause } from "./classify.js";
export { configSchema, type ProviderConfig, parseProviderConfig } from "./config.js";
export { decodeStartup, type Startup } from "./decode.js";
export { type AgentEnv, buildEnv, RESERVED_KEYS } from "./env.js";
export { planGc } from "./gc.js";
export { fingerprint, intentTemplate } from "./intent.js";
export { type LoopStep, type LoserStep, loopStep, loserStep } from "./loop-rules.js";
export { claimManifest, namespaceManifest, podManifest, secretManifest } from "./manifests.js";
export { type AgentIdentity, identityFromNsec, identityOf, MANAGED_SELECTOR, selectorFor } from "./naming.js";
export { type ProviderRequest, parseRequest } from "./request.js";
export { type Fence, type VerifiedPod, verifyPod } from "./verify.js";
