/**
 * Who the loops of `berth serve` say acted, in every event and record they chain: the same actor for both targets, so
 * an operator reading either chain sees one loop.
 */
import type { JsonObject } from "../core/crypto/canonical.js";

export const LOOP_ACTOR: JsonObject = { actor: "reconcile-loop", via: "berth serve", pid: process.pid };
