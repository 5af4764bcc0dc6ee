import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { connectFresh } from "./connect.js";

describe("connecting with no kubeconfig (issue 36)", () => {
  it("says there is no kubeconfig and where it looked, not a TLS setting of the client's fallback", async () => {
    const home = mkdtempSync(join(tmpdir(), "berth-no-kube-"));
    const unset = await connectFresh(null, { HOME: home, PATH: process.env.PATH });
    expect(unset).toEqual({
      ok: false,
      error: expect.stringContaining(
        `no kubeconfig: KUBECONFIG is not set and ${join(home, ".kube", "config")} does not exist`,
      ),
    });
    const named = await connectFresh(null, { HOME: home, KUBECONFIG: "/nonexistent/kubeconfig" });
    expect(named).toEqual({
      ok: false,
      error: expect.stringContaining("KUBECONFIG names /nonexistent/kubeconfig, which does not exist"),
    });
    expect(JSON.stringify([unset, named])).not.toContain("skipTLSVerify");
  });
});
