import { describe, expect, it } from "vitest";
import { heldStatusRow } from "../../../test/support/status-row.js";
import type { JsonObject } from "../crypto/canonical.js";
import { verifyAnswer } from "./answer.js";
import { REFUSAL_CODES } from "./messages.js";
import { parseResult } from "./results.js";

const row = heldStatusRow();

describe("typed node answers (issue 14 item 3)", () => {
  it("a status answer's rows are parsed as in-flight marks, instances or departed rows, and a mistyped member is refused naming it", () => {
    const rows: JsonObject[] = [
      row,
      { decision_id: "d".repeat(64), in_flight: true, method: "place", since_ms: 3 },
      { instance_id: row.instance_id, decision_id: row.decision_id, departed: "unloaded", at_ms: 4 },
    ];
    expect(parseResult("status", { rows })).toEqual({ ok: true });
    expect(parseResult("status", { row })).toEqual({ ok: true });
    const bad = parseResult("status", { row: { ...row, generation: "1" } });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/status result/);
  });

  it("each mutating method's answer needs its members; a newer node's extra member is accepted", () => {
    expect(
      parseResult("place", {
        instance_id: row.instance_id,
        name: "probe",
        variant: "v",
        route: "native",
        package_id: row.package_id,
        state: "running",
        pid: 1,
        extra: true,
      }),
    ).toEqual({ ok: true });
    expect(parseResult("place", { name: "probe" }).ok).toBe(false);
    expect(parseResult("unload", { unloaded: true })).toEqual({ ok: true });
    expect(parseResult("stop", { stopped: true, already: false, exit_code: null, signal: "SIGTERM" })).toEqual({
      ok: true,
    });
    expect(parseResult("start", { started: "yes", already: false }).ok).toBe(false);
    expect(parseResult("logs", { stdout: "", stderr: "", truncated_stdout: false })).toEqual({ ok: true });
  });

  it("a fence mismatch has its own refusal code", () => {
    expect(REFUSAL_CODES).toContain("precondition_failed");
  });

  it("an answer signed by another key names the offered key as a field, not only in the sentence", () => {
    const offered = "a".repeat(64);
    const check = verifyAnswer(
      { payload: "{}", key: offered, sig: "b".repeat(128) },
      { method: "status" } as never,
      "f".repeat(64),
    );
    expect(check).toMatchObject({ ok: false, error: { offered_key: offered } });
  });
});
