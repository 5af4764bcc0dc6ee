/** The common mistakes get a message that names what is wrong and the command that fixes it, and a documented exit status. */
import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/sqlite.js";
import { berth, removeHomes, tempHome } from "./support.js";

let home: string;
beforeAll(async () => {
  home = tempHome();
  expect((await berth(home, ["keys", "new"])).code).toBe(0);
});
afterAll(removeHomes);

describe("errors that say what to do", () => {
  it("a missing key file names the command that creates one (exit 2)", async () => {
    // A home that exists (its store made) whose key is gone; a home that does not exist at all is refused before, by
    // the no-home answer of issue 36 (test/cli/no-home.test.ts).
    const keyless = tempHome();
    expect((await berth(keyless, ["keys", "new"])).code).toBe(0);
    // A list that asks the nodes opens the controller, which makes the store (issue 35: a plain list makes none).
    expect((await berth(keyless, ["instances", "--refresh"])).code).toBe(0);
    rmSync(join(keyless, "keys", "controller.key"));
    const r = await berth(keyless, ["nodes", "list"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^berth: key file .*controller\.key does not exist; create one with `berth keys new --key-file .*`/,
    );
  });

  it("a key file readable by others names the chmod that fixes it (exit 2)", async () => {
    const other = tempHome();
    await berth(other, ["keys", "new"]);
    // Issue 35: on a home with no controller store a plain list answers "nothing here" without reading the key; with a
    // store, the key that proves the store is this home's is read, and refused when others can read it.
    expect((await berth(other, ["instances", "--refresh"])).code).toBe(0);
    chmodSync(join(other, "keys", "controller.key"), 0o644);
    const r = await berth(other, ["instances"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`run \`chmod 600 ${join(other, "keys", "controller.key")}\``);
  });

  it("a flag that fails its schema names the flag and the allowed values (exit 2)", async () => {
    const r = await berth(home, ["nodes", "tier", "127.0.0.1:1", "trusted"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/tier: value: .*"discovered"\|"paired"\|"pinned".*correct the named field/);
  });

  it("a spec file that fails its schema names the field (exit 2)", async () => {
    const spec = join(home, "nameless.yaml");
    writeFileSync(spec, "apiVersion: berth/v1\nkind: Agent\nmetadata: {}\nspec: {target: mesh}\n");
    const r = await berth(home, ["deploy", spec]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/metadata\.name/);
    expect(r.stderr).toMatch(/correct the named field/);
  });

  it("an unreachable node says to check its daemon and address (exit 1)", async () => {
    const r = await berth(home, ["nodes", "add", "127.0.0.1:1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the node did not answer \(.*ECONNREFUSED.*\); check that `berth node serve` runs there/);
  });

  it("an unknown agent points to `berth agents` and `berth deploy` (exit 1)", async () => {
    const r = await berth(home, ["agent", "logs", "nobody"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /no agent "nobody" was deployed from this berth home; `berth agents` lists .* `berth deploy FILE` deploys one/,
    );
  });

  it("a verb that is not one of the choices lists them (exit 2)", async () => {
    const r = await berth(home, ["agent", "restart", "nobody"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Allowed choices are status, logs, stop, start, replace, purge, delete/);
  });

  it("a chain that fails verification says what to do next (exit 1)", async () => {
    // The controller's chain gets events from a dry-run place; then one event is changed behind berth's back.
    const pkg = join(home, "missing-package");
    await berth(home, ["place", pkg, "--dry-run"]);
    const db = openDatabase(join(home, "controller.db"));
    db.exec("DROP TRIGGER IF EXISTS audit_event_no_update");
    db.prepare("UPDATE audit_event SET ts = ts + 1 WHERE seq = 0").run();
    db.close();
    const r = await berth(home, ["audit", "verify", "--key-file", join(home, "keys", "controller.key")]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^FAIL chain [0-9a-f]{32} seq 0 /);
    expect(r.stderr).toContain("`berth audit reseal --new-chain --reason TEXT`");
  });
});
