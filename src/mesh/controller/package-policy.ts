/**
 * What a placed package declares about moving (issue 16, spec/mesh.md §15): `migratable` and `sticky` from its
 * statement in the controller's package store. Read from the verified copy the controller took in; a manifest that
 * cannot be read gives null, and the caller treats that as "never moved" (the safe reading).
 */
import { join } from "node:path";
import { readEnvelope } from "../packages/dir.js";
import { PACKAGE_STORE } from "./prepare.js";

export function packagePolicyOf(dataDir: string, packageId: string): { migratable: boolean; sticky: boolean } | null {
  if (!/^[0-9a-f]{64}$/.test(packageId)) return null;
  try {
    const { envelope } = readEnvelope(join(dataDir, PACKAGE_STORE, packageId));
    return { migratable: envelope.statement.policy.migratable, sticky: envelope.statement.policy.sticky };
  } catch {
    return null;
  }
}
