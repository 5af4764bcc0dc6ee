/**
 * Issue 12: `berth package build` followed symbolic links out of the package directory, so an outside file was
 * signed and shipped. A link that leaves is refused, naming the link and where it points; a link that stays inside
 * is followed (the package pins the bytes it points to).
 */
import { createHash } from "node:crypto";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { buildPackage, initPackage } from "../../src/mesh/packages/dir.js";
import { cleanup, MAIN, requireBuild, tempDir } from "../mesh/harness.js";

afterEach(cleanup);

function packageListing(files: string[]): { dir: string; outside: string } {
  const root = tempDir("berth-pkg-links-");
  const dir = join(root, "pkg");
  const outside = join(root, "outside");
  mkdirSync(dir);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "an outside file\n");
  writeFileSync(join(dir, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
  initPackage(dir, {
    name: "links",
    kind: "probe",
    files,
    variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
  });
  return { dir, outside };
}

describe("package build and symbolic links", () => {
  it("refuses a listed file that is a link to a file outside the package directory, naming the link and its target", () => {
    requireBuild();
    const { dir, outside } = packageListing(["run.sh", "data.txt"]);
    symlinkSync(join(outside, "secret.txt"), join(dir, "data.txt"));
    expect(() => buildPackage(dir)).toThrow(`data.txt is a symbolic link to ${join(outside, "secret.txt")}`);
    const cli = spawnSync(process.execPath, [MAIN, "package", "build", dir], { encoding: "utf8" });
    expect(cli.status).not.toBe(0);
    expect(cli.stderr).toContain("outside the package directory");
    expect(cli.stderr).toContain("data.txt is a symbolic link");
  });

  it("refuses a file reached through a directory link that leaves, and a relative link that climbs out", () => {
    const { dir } = packageListing(["run.sh", "lib/secret.txt"]);
    symlinkSync("../outside", join(dir, "lib"));
    expect(() => buildPackage(dir)).toThrow("lib is a symbolic link to ../outside");
    const climbing = packageListing(["run.sh", "up.txt"]);
    symlinkSync("../outside/secret.txt", join(climbing.dir, "up.txt"));
    expect(() => buildPackage(climbing.dir)).toThrow("up.txt is a symbolic link to ../outside/secret.txt");
  });

  it("follows a link that stays inside the package and pins the bytes it points to", () => {
    const { dir } = packageListing(["run.sh", "alias.sh"]);
    symlinkSync("run.sh", join(dir, "alias.sh"));
    const { statement } = buildPackage(dir);
    const alias = statement.files.find((f) => f.path === "alias.sh");
    expect(alias?.sha256).toBe(createHash("sha256").update("#!/bin/sh\n").digest("hex"));
  });
});
