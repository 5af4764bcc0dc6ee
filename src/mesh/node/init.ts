/**
 * Creating a node data directory (`berth node init`, and in-process nodes in tests): identity key (0600) in a
 * directory of mode 0700, node.json, signers.json, and optionally permits.json. Never overwrites an existing key.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { nodeIdOf, type PublicKeyHex } from "../../core/crypto/ed25519.js";
import type { PermitRuleInput } from "../../core/governance/policy.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../../keys/key-file.js";
import { FILES, loadNodeConfig } from "./config.js";

export interface NodeInit {
  readonly name?: string;
  readonly controllers?: readonly string[];
  readonly signers?: readonly string[];
  readonly board?: string;
  readonly permits?: readonly PermitRuleInput[];
  /** Extra node.json members (e.g. `gate`, `limits`, `max_instances`). */
  readonly config?: Record<string, unknown>;
}

export function initNodeDataDir(
  dataDir: string,
  init: NodeInit = {},
): { dataDir: string; nodeId: string; publicKey: PublicKeyHex } {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keyPath = join(dir, FILES.key);
  const fresh = !existsSync(keyPath);
  const key = fresh ? generateSigningKey() : loadKeyFile(keyPath);
  if (fresh) saveKeyFile(keyPath, key);
  const configPath = join(dir, FILES.config);
  if (!existsSync(configPath)) {
    const config = {
      name: init.name ?? "node",
      controllers: (init.controllers ?? []).map((k) => ({ key: k })),
      self_tier: "paired",
      ...(init.board ? { board: init.board } : {}),
      ...(init.config ?? {}),
    };
    writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    loadNodeConfig(dir); // refuse to leave an invalid file behind
  }
  const signersPath = join(dir, FILES.signers);
  if (!existsSync(signersPath)) {
    const signers = (init.signers ?? []).map((k, i) => ({ key: k, name: `signer-${i + 1}` }));
    writeFileSync(signersPath, `${JSON.stringify(signers, null, 2)}\n`, { mode: 0o600 });
  }
  if (init.permits && !existsSync(join(dir, FILES.permits))) {
    writeFileSync(join(dir, FILES.permits), `${JSON.stringify(init.permits, null, 2)}\n`, { mode: 0o600 });
  }
  return { dataDir: dir, nodeId: nodeIdOf(key.publicKey), publicKey: key.publicKey };
}
