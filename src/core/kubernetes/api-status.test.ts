import { describe, expect, it } from "vitest";
import { apiErrorOf, deleteVerdict, describeApiError, isDefiniteRejection, parseImfFixdate } from "./api-status.js";
import { providerPath } from "./path-env.js";

const status = (reason: string, code: number, message = "m") =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason, code, message });

describe("apiserver verdicts (spec/kubernetes.md §8.6)", () => {
  it("maps a 2xx to Accepted and the Status reasons by their exact spelling", () => {
    expect(deleteVerdict(200, "{}")).toBe("accepted");
    expect(deleteVerdict(202, "")).toBe("accepted");
    expect(deleteVerdict(404, status("NotFound", 404))).toBe("not-found");
    expect(deleteVerdict(409, status("Conflict", 409))).toBe("precondition-failed");
  });

  it("never conflates the two 409s", () => {
    expect(deleteVerdict(409, status("AlreadyExists", 409))).toBe("error");
    const conflict = apiErrorOf(409, status("Conflict", 409));
    const exists = apiErrorOf(409, status("AlreadyExists", 409));
    expect(conflict).not.toEqual(exists);
    expect(conflict.kind === "status" && conflict.reason).toBe("Conflict");
    expect(exists.kind === "status" && exists.reason).toBe("AlreadyExists");
  });

  it("treats a transport error, an empty reason or a non-Status body as no verdict", () => {
    expect(deleteVerdict(null, "")).toBe("error");
    expect(deleteVerdict(404, JSON.stringify({ kind: "Status", reason: "", code: 404 }))).toBe("error");
    expect(deleteVerdict(404, "<html>not found</html>")).toBe("error");
    expect(deleteVerdict(404, JSON.stringify({ kind: "Pod", reason: "NotFound" }))).toBe("error");
    expect(apiErrorOf(502, "bad gateway").kind).toBe("transport");
  });

  it("renders {e} as reason and message and knows definite rejections", () => {
    expect(describeApiError(apiErrorOf(403, status("Forbidden", 403, "pods is forbidden")))).toBe(
      "Forbidden: pods is forbidden",
    );
    expect(isDefiniteRejection(apiErrorOf(422, status("Invalid", 422)))).toBe(true);
    expect(isDefiniteRejection(apiErrorOf(500, status("InternalError", 500)))).toBe(false);
    expect(isDefiniteRejection({ kind: "transport", message: "ECONNRESET" })).toBe(false);
  });
});

describe("the server Date header (spec/kubernetes.md §11 step 1)", () => {
  it("parses the spec's IMF-fixdate vector", () => {
    expect(parseImfFixdate("Sun, 02 Aug 2026 04:00:00 GMT")).toBe(Date.parse("2026-08-02T04:00:00Z"));
  });

  it.each([
    null,
    "",
    "2026-08-02T04:00:00Z",
    "Sunday, 02-Aug-26 04:00:00 GMT",
    "Mon, 02 Aug 2026 04:00:00 GMT",
    "Sun, 31 Feb 2026 04:00:00 GMT",
    "Sun, 02 Aug 2026 04:00:00 UTC",
  ])("treats %j as no server clock", (header) => {
    expect(parseImfFixdate(header)).toBeNull();
  });
});

describe("PATH for credential plugins (spec/kubernetes.md §8.1)", () => {
  it("prepends the usual locations, then HOME's, then inherited entries without empty ones", () => {
    expect(providerPath("/usr/bin::/bin:", "/home/u")).toBe(
      "/opt/homebrew/bin:/usr/local/bin:/home/u/.local/bin:/usr/bin:/bin",
    );
    expect(providerPath(undefined, undefined)).toBe("/opt/homebrew/bin:/usr/local/bin");
  });
});
