import { describe, expect, it } from "vitest";
import { revokedSubject } from "./revocation.js";

const P = "a".repeat(64);
const S = "b".repeat(64);
const F = "c".repeat(64);
const refs = { package_id: P, signer_keys: [S], file_hashes: [F] };
const list = (kind: "package" | "signer" | "file" | "node", id: string) => ({ generation: 1, subjects: [{ kind, id, reason: "", at_ms: 0 }] });

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
