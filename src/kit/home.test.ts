import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defaultBerthHome, ROOT_BERTH_HOME } from "./home.js";

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

function userHome(mode: number, withBerth = false): string {
  const parent = mkdtempSync(join(tmpdir(), "berth-home-rule-"));
  made.push(parent);
  chmodSync(parent, 0o755);
  const home = join(parent, "user");
  mkdirSync(home);
  if (withBerth) mkdirSync(join(home, ".berth"));
  chmodSync(home, mode);
  return home;
}

describe("the default berth home", () => {
  it("is BERTH_HOME whenever it is set, for every user", () => {
    const home = userHome(0o700);
    expect(defaultBerthHome({ env: { BERTH_HOME: "/srv/b" }, userHome: home, uid: 0 })).toBe("/srv/b");
    expect(defaultBerthHome({ env: { BERTH_HOME: "/srv/b" }, userHome: home, uid: 1000 })).toBe("/srv/b");
  });

  it("is ~/.berth for a user who is not root, even in a closed home", () => {
    const home = userHome(0o700);
    expect(defaultBerthHome({ env: {}, userHome: home, uid: 1000 })).toBe(join(home, ".berth"));
  });

  it("is ~/.berth for root when others may pass through root's home", () => {
    const home = userHome(0o711);
    expect(defaultBerthHome({ env: {}, userHome: home, uid: 0 })).toBe(join(home, ".berth"));
  });

  it("is /var/lib/berth for root whose home others cannot pass through, so agents run as nobody can reach it", () => {
    const home = userHome(0o700);
    expect(defaultBerthHome({ env: {}, userHome: home, uid: 0 })).toBe(ROOT_BERTH_HOME);
  });

  it("keeps an existing ~/.berth of root's, so a home made before is never abandoned", () => {
    const home = userHome(0o700, true);
    expect(defaultBerthHome({ env: {}, userHome: home, uid: 0 })).toBe(join(home, ".berth"));
  });
});
