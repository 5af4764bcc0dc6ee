import { chmodSync, mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { rmSync } from "node:fs";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "./key-file.js";

const root = mkdtempSync(join(tmpdir(), "berth-keyfile-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function savedKey(name: string): { dir: string; path: string } {
  const dir = join(root, name);
  mkdirSync(dir, { mode: 0o700 });
  const path = join(dir, "id.key");
  saveKeyFile(path, generateSigningKey());
  return { dir, path };
}

describe("loading an identity key file", () => {
  it("loads a 0600 key in a 0700 directory", () => {
    const { path } = savedKey("plain");
    expect(loadKeyFile(path).publicKey).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses a symbolic link in place of the key file, naming where it points", () => {
    const { path } = savedKey("target");
    const link = join(savedKey("linked").dir, "link.key");
    symlinkSync(path, link);
    expect(() => loadKeyFile(link)).toThrow(`key file ${link} is a symbolic link (to ${path})`);
  });

  it("refuses a key whose directory group or others can write, with the command that fixes it", () => {
    const { dir, path } = savedKey("group-writable");
    chmodSync(dir, 0o770);
    expect(() => loadKeyFile(path)).toThrow(`run \`chmod go-w ${dir}\``);
    chmodSync(dir, 0o702);
    expect(() => loadKeyFile(path)).toThrow("writable by group or others");
    chmodSync(dir, 0o700);
    expect(() => loadKeyFile(path)).not.toThrow();
  });

  it("accepts our own key in a sticky world-writable directory, where nobody else can replace it", () => {
    const { dir, path } = savedKey("sticky");
    chmodSync(dir, 0o1777);
    expect(() => loadKeyFile(path)).not.toThrow();
  });

  it("refuses a key file readable by group or others", () => {
    const { path } = savedKey("readable");
    chmodSync(path, 0o640);
    expect(() => loadKeyFile(path)).toThrow("readable by group or others (mode 640)");
  });
});
