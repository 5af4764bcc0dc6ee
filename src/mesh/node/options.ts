/** What a node service is made of: its data dir, key, configuration, stores and clock (shared by the service's parts). */
import type { ContentStore } from "./content.js";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { NativeRuntime } from "./runtime.js";
import type { NodeConfig } from "./config.js";
import type { NodeStore } from "./store.js";
import type { NodeLog } from "./log.js";
import type { SigningKey } from "../../core/crypto/ed25519.js";

export interface NodeServiceOptions {
  readonly dataDir: string;
  readonly key: SigningKey;
  readonly config: NodeConfig;
  readonly bootId: string;
  readonly store: NodeStore;
  readonly runtime: NativeRuntime;
  readonly content: ContentStore;
  readonly clock: () => number;
  readonly version: string;
  /** Controller keys and signer keys given by flags, in addition to node.json and signers.json. */
  readonly extraControllers?: readonly string[];
  readonly extraSigners?: readonly string[];
  readonly perf?: readonly JsonObject[];
  readonly fetchTimeoutMs?: number;
  /** Diagnostics (pino's line format, log.ts); silent when unset. */
  readonly log?: NodeLog;
  /**
   * Issue 19: `tls` when every request reaches this service over the TLS listener (spec/mesh.md §4.11), so a captured
   * request cannot be replayed (describe.ts syncs its replay nonce only otherwise). Unset: treated as plaintext.
   */
  readonly transport?: "tls" | "plaintext";
}
