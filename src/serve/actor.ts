/**
 * Who the loops of `berth serve` say acted, in every event and record they chain: the same actor for both targets, so
 * an operator reading either chain sees one loop.
 */
import type { JsonObject } from "../core/crypto/canonical.js";

/**
 * `"reconcile-loop"` names the keep loop (issue 32's word); the value stays as it is because chains already hold it,
 * and readers of a chain match on it.
 */
export const LOOP_ACTOR: JsonObject = { actor: "reconcile-loop", via: "berth serve", pid: process.pid };
