/** What the audit verbs (audit.ts) use, gathered so that they load it in one import when one of them runs (issue 19). */
import { z } from "zod";

export { Chain, exportChainLines, listChains, storedCheckpoints, verifyStoredChain } from "../chain/chain.js";
export { importChain, parseEventLines } from "../chain/import.js";
export { eventsAfter, ownChain, ownerKeyOf, tailEvents } from "../chain/read.js";
export { storedTreeView } from "../chain/tree-reader.js";
export { CHAIN_SCHEMA_VERSION } from "../chain/schema.js";
export { verifyStoredChainParallel } from "../chain/verify-parallel.js";
export { exportLine } from "../core/chain/event.js";
export { verifyEvents } from "../core/chain/verify.js";
export { loadKeyFile } from "../keys/key-file.js";
export { assertSchemaNotNewer, openDatabase } from "../store/sqlite.js";
export { z };

export const HexKey = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (an Ed25519 public key)");
export const ExpectHead = z.string().regex(/^\d+:[0-9a-f]{64}$/, "must look like <seq>:<64 hex hash>");
export { openCheckpointNote, signCheckpointNote } from "../core/chain/note.js";
export { checkProofDocument } from "../core/chain/proof-check.js";
export { checkExtends, listTreeView, proveEvent, treeHeadOf } from "../core/chain/tree-checkpoint.js";
