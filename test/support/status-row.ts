import type { JsonObject } from "../../src/core/crypto/canonical.js";

/** A held instance's full status row as a node answers it (src/core/protocol/results.ts), for tests to vary. */
export function heldStatusRow(
  over: JsonObject = {},
): JsonObject & { instance_id: string; decision_id: string; package_id: string } {
  return {
    instance_id: "probe-0123456789ab",
    decision_id: "d".repeat(64),
    name: "probe",
    package_id: "c".repeat(64),
    variant: "x86_64-linux",
    route: "native",
    state: "running",
    exit_code: null,
    signal: null,
    detail: null,
    pid: 42,
    started_ms: 1,
    requester: "e".repeat(32),
    agent: null,
    intent: null,
    generation: 1,
    ...over,
  } as JsonObject & { instance_id: string; decision_id: string; package_id: string };
}
