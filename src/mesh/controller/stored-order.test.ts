import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type PlaceOrder, PlaceOrderSchema } from "./order.js";
import { envFromProblem, readRef, rebuildOrder, storedOrderOf } from "./stored-order.js";

const NODE_A = "a".repeat(32);
const NODE_B = "b".repeat(32);
const PKG = "c".repeat(64);

function order(over: Record<string, unknown> = {}): PlaceOrder {
  return PlaceOrderSchema.parse({
    package: PKG,
    name: "triage",
    config: { mode: "service", args: ["--v2"], env: { LEVEL: "debug", TOKEN: "s3cret-value" } },
    env_from: { TOKEN: { env: "TRIAGE_TOKEN" } },
    ...over,
  });
}

describe("the order a reschedule reruns (issue 16)", () => {
  it("keeps inline env values and, for a valueFrom value, only its reference: the secret is not in the stored order", () => {
    const stored = storedOrderOf(order(), PKG, "triage");
    expect(stored.config.env).toEqual({ LEVEL: "debug" });
    expect(stored.env_from).toEqual({ TOKEN: { env: "TRIAGE_TOKEN" } });
    expect(JSON.stringify(stored)).not.toContain("s3cret-value");
  });

  it("rebuilt, it reads each reference again, avoids the node it leaves and pins nothing", () => {
    const stored = storedOrderOf(order({ pin: NODE_A, prefer: [NODE_A, NODE_B], avoid: [NODE_B] }), PKG, "triage");
    const r = rebuildOrder(stored, NODE_A, readRef({ TRIAGE_TOKEN: "fresh-token" }));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.config?.env).toEqual({ LEVEL: "debug", TOKEN: "fresh-token" });
    expect(r.value.pin).toBeNull();
    expect(r.value.avoid).toEqual([NODE_B, NODE_A]);
    expect(r.value.prefer).toEqual([NODE_B]);
    expect(r.value.dry_run).toBe(false);
  });

  it("a lost instance's order (no node left) keeps its avoid list as stored", () => {
    const r = rebuildOrder(
      storedOrderOf(order({ avoid: [NODE_B] }), PKG, "triage"),
      null,
      readRef({ TRIAGE_TOKEN: "t" }),
    );
    expect(r.ok && r.value.avoid).toEqual([NODE_B]);
  });

  it("a reference that cannot be read names the env entry and the variable or file, never a value", () => {
    const stored = storedOrderOf(order(), PKG, "triage");
    const r = rebuildOrder(stored, NODE_A, readRef({}));
    expect(r).toEqual({
      ok: false,
      error:
        "the stored order's env TOKEN (valueFrom): environment variable TRIAGE_TOKEN is not set (or empty) in this process",
    });
    const dir = mkdtempSync(join(tmpdir(), "berth-order-"));
    const file = join(dir, "token");
    writeFileSync(file, "from-file\n");
    const fromFile = storedOrderOf(order({ env_from: { TOKEN: { file } } }), PKG, "triage");
    const again = rebuildOrder(fromFile, NODE_A, readRef({}));
    expect(again.ok && again.value.config?.env?.TOKEN).toBe("from-file");
    const missing = rebuildOrder(
      storedOrderOf(order({ env_from: { TOKEN: { file: join(dir, "gone") } } }), PKG, "triage"),
      NODE_A,
      readRef({}),
    );
    expect(missing).toEqual({
      ok: false,
      error: `the stored order's env TOKEN (valueFrom): ${join(dir, "gone")} does not exist (the secret value); check the path`,
    });
  });

  it("a file holding a NUL byte is refused as the deploy refuses it, naming the file and never the value", () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-order-"));
    const file = join(dir, "token");
    writeFileSync(file, "to\0ken\n");
    const r = rebuildOrder(storedOrderOf(order({ env_from: { TOKEN: { file } } }), PKG, "triage"), NODE_A, readRef({}));
    expect(r).toEqual({
      ok: false,
      error: `the stored order's env TOKEN (valueFrom): ${file} holds a NUL byte, which no environment value can carry`,
    });
  });

  it("an env_from entry naming no config.env entry is refused with its field, and a relative file is refused by the schema", () => {
    expect(envFromProblem(order({ env_from: { OTHER: { env: "X" } } }))).toBe(
      "place order: field env_from.OTHER: names no config.env entry OTHER",
    );
    expect(envFromProblem(order())).toBeNull();
    const relative = PlaceOrderSchema.safeParse({
      package: PKG,
      config: { env: { T: "x" } },
      env_from: { T: { file: "token" } },
    });
    expect(relative.success).toBe(false);
    expect(relative.error?.issues[0]?.path).toEqual(["env_from", "T", "file"]);
  });
});
