import { describe, expect, it } from "vitest";
import { parseRevocations } from "../governance/policy.js";
import { revocationsChanged, revokedSubject } from "./revocation.js";

const P = "a".repeat(64);
const S = "b".repeat(64);
const F = "c".repeat(64);
const refs = { package_id: P, signer_keys: [S], file_hashes: [F] };
const list = (kind: "package" | "signer" | "file" | "node", id: string) => ({
  generation: 1,
  subjects: [{ kind, id, reason: "", at_ms: 0 }],
});

describe("revocation matching", () => {
  it.each([
    ["package", P, `package ${P}`],
    ["signer", S, `signer ${S}`],
    ["file", F, `file ${F}`],
  ] as const)("a revoked %s names the instance", (kind, id, subject) => {
    expect(revokedSubject(refs, list(kind, id))).toBe(subject);
  });
  it("an unrelated subject, a node subject or no list names nothing", () => {
    expect(revokedSubject(refs, list("package", "d".repeat(64)))).toBeNull();
    expect(revokedSubject(refs, list("node", P))).toBeNull();
    expect(revokedSubject(refs, null)).toBeNull();
  });
});

describe("revocation list parsing and change (issue 12)", () => {
  it("normalises a hex id to lowercase at parse time, so an uppercase id revokes", () => {
    const parsed = parseRevocations(
      JSON.stringify({ generation: 1, subjects: [{ kind: "package", id: P.toUpperCase(), reason: "", at_ms: 0 }] }),
    );
    expect(parsed.ok && parsed.value.subjects[0]?.id).toBe(P);
    expect(parsed.ok && revokedSubject(refs, parsed.value)).toBe(`package ${P}`);
  });
  it("a list whose subjects changed has changed even when its declared generation did not", () => {
    expect(revocationsChanged(list("package", P), list("package", P))).toBe(false);
    expect(revocationsChanged(list("package", P), list("file", F))).toBe(true);
    expect(revocationsChanged({ generation: 1, subjects: [] }, list("file", F))).toBe(true);
    expect(revocationsChanged(null, list("file", F))).toBe(true);
    expect(revocationsChanged(null, null)).toBe(false);
  });
});
