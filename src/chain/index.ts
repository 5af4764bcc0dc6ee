/**
 * What the audit chain's shell offers the rest of berth (spec/audit-chain.md): the store of one component's signed,
 * hash-chained events beside its state in one SQLite file. The pure parts (event hashing, sealing, verification,
 * checkpoints) are in `src/core/chain/`; this folder reads and writes them.
 *
 * - `EngineChain` — the same chain on a `StoreEngine` (the controller's, SQLite or PostgreSQL), asynchronous.
 * - `Chain` — open (with the start-up check from the newest valid checkpoint, §7), append inside the caller's
 *   transaction (so a state change and the event recording it commit together), checkpoints (§10), lookups.
 * - `verifyStoredChain`, `startupCheck`, `storedCheckpoints` — offline and start-up verification of what is stored.
 * - `exportChainLines`, `importChain`, `parseEventLines` — the export format and its import (verify elsewhere).
 * - `findEvents`, `listChains` — reading for the CLI, the API and the dashboard.
 * - `ensureChainSchema` — the tables, created in the owner's schema migration.
 */
export {
  Chain,
  ChainError,
  exportChainLines,
  findEvents,
  listChains,
  rowToEvent,
  startupCheck,
  storedCheckpoints,
  verifyStoredChain,
  type WallClock,
} from "./chain.js";
export {
  CHECKPOINT_EVERY_EVENTS,
  CHECKPOINT_EVERY_MS,
  type CheckpointPolicy,
  checkpointPolicyFromEnv,
  checkpointPollMs,
  DEFAULT_CHECKPOINT_POLICY,
} from "./checkpoint-policy.js";
export { EngineChain, type FindQuery, findEventsOn, startupCheckOn, verifyStoredOn } from "./engine-chain.js";
export { type ImportOutcome, importChain, type ParsedLines, parseEventLines } from "./import.js";
export { CHAIN_SCHEMA_VERSION, ensureChainSchema, ensureChainSchemaOn } from "./schema.js";
