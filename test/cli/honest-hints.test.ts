/**
 * Issue 36 item 5 (honest hints) and item 6 (`berth keys new --nsec`): what a newcomer's mistakes are answered with.
 * A missing file is named as missing; a key that did not sign the chain is said to be the wrong key, with nothing
 * destructive suggested; every failure has the one `berth:` prefix. Judged from the built `berth`'s own output.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decodeNsec } from "../../src/core/identity/nostr.js";
import { berth, removeHomes, tempHome } from "./support.js";

afterEach(removeHomes);

describe("honest hints", () => {
  it("a key that did not sign the chain is called the wrong key, and no reseal is suggested", async () => {
    const home = tempHome();
    expect((await berth(home, ["keys", "new"])).code).toBe(0);
    expect((await berth(home, ["doctor"])).code, "the controller's chain exists").toBe(0);
    const other = await berth(home, ["keys", "new", "--key-file", join(home, "other.key"), "--json"]);
    const wrong = await berth(home, ["audit", "verify", "--pubkey", String(JSON.parse(other.stdout).public_key)]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("this is not the key that signed this chain");
    expect(wrong.stderr).toContain("you may have given another key");
    expect(wrong.stderr + wrong.stdout).not.toMatch(/reseal|cannot be trusted/);
    const doc = JSON.parse(
      (await berth(home, ["audit", "verify", "--pubkey", String(JSON.parse(other.stdout).public_key), "--json"]))
        .stdout,
    );
    const own = JSON.parse((await berth(home, ["keys", "show", "--json"])).stdout).public_key;
    expect(doc.failure).toMatchObject({ code: "genesis", signed_by: own });
  });

  it("a spec file that is not there is named as missing, and usage errors have berth's prefix", async () => {
    const home = tempHome();
    const missing = await berth(home, ["deploy", join(home, "nope.yaml")]);
    expect([missing.code, missing.stderr.trim()]).toEqual([
      2,
      `berth: ${join(home, "nope.yaml")} does not exist (the agent spec); check the path`,
    ]);
    const usage = await berth(home, ["agents", "--bogus"]);
    expect([usage.code, usage.stderr.split("\n")[0]]).toEqual([2, "berth: unknown option '--bogus'"]);
  });
});

describe("berth keys new --nsec", () => {
  it("writes a Kubernetes agent's Nostr secret, 0600, never over an existing file, and prints only its public key", async () => {
    const home = tempHome();
    const file = join(home, "scout.nsec");
    const made = await berth(home, ["keys", "new", "--nsec", file, "--json"]);
    expect(made.code, made.stderr).toBe(0);
    const nsec = readFileSync(file, "utf8").trim();
    const decoded = decodeNsec(nsec);
    expect(decoded.ok).toBe(true);
    expect(JSON.parse(made.stdout)).toEqual({ nsec_file: file, public_key: decoded.ok ? decoded.value : null });
    expect(made.stdout).not.toContain(nsec);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = await berth(home, ["keys", "new", "--nsec", file]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("already exists");
    expect(readFileSync(file, "utf8").trim()).toBe(nsec);
  });
});
