/**
 * Issue 33 items 9 and 10, from the CLI and a real node daemon: loader hooks are refused by family at `berth package
 * build` (and `sign`) and on the node; a declared `string` may carry a pattern the value must match; and a value for an
 * env the signed package types `secret` is refused inline (the field named) and never reaches the controller's store
 * or its backup, while `valueFrom` works.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildPackage, initPackage, type SourceManifest, signPackage } from "../../src/mesh/packages/dir.js";
import { cleanup, NodeProcess, tempDir } from "../mesh/harness.js";
import { cliHome } from "../mesh-controller/support/cli-home.js";
import { hostArch, hostOs, TEST_PERMIT } from "../mesh-controller/support/package.js";
import { killAll } from "../support/process.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

/** The hook names the issue lists, one of each family (a declared surface holding any of them cannot be built). */
const HOOKS = [
  "GIT_CONFIG_PARAMETERS",
  "GIT_SSH",
  "GIT_ASKPASS",
  "GIT_PROXY_COMMAND",
  "GIT_CONFIG_KEY_0",
  "DOTNET_STARTUP_HOOKS",
  "PHPRC",
  "ERL_AFLAGS",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  "NPM_CONFIG_SCRIPT_SHELL",
  "SSL_CERT_FILE",
  "HTTPS_PROXY",
  "EDITOR",
  "PAGER",
];

function source(dir: string, config: SourceManifest["config"]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "run.sh"), "#!/bin/sh\necho up\nexec sleep 300\n");
  chmodSync(join(dir, "run.sh"), 0o755);
  initPackage(dir, {
    name: "surface",
    kind: TEST_PERMIT.kinds[0] as string,
    files: ["run.sh"],
    network: "egress",
    variants: [
      {
        id: `${hostArch()}-${hostOs()}`,
        arch: hostArch(),
        os: hostOs(),
        entry: { program: "run.sh", args: [] },
        requires: [],
      },
    ],
    config,
  });
}

describe("loader hooks by family, patterns, and secrets never inline (issue 33 items 9, 10)", {
  timeout: 120_000,
}, () => {
  it("berth package build refuses a surface declaring any of the listed hook families, naming each", async () => {
    const cli = await cliHome("berth-families-");
    for (const name of HOOKS) {
      const dir = join(tempDir(), name);
      source(dir, { env: { [name]: { type: "string" } } });
      const r = await cli.berth("package", "build", dir);
      expect(r.code, name).not.toBe(0);
      expect(r.stdout + r.stderr, name).toMatch(new RegExp(`config\\.env\\.${name}.*never accepted`));
      expect(existsSync(join(dir, "berth-package.json")), name).toBe(false);
    }
  });

  it("a value outside a declared string's pattern is refused by the node naming the field; one inside runs", async () => {
    const cli = await cliHome("berth-pattern-");
    const pkg = join(cli.home, "levels");
    source(pkg, { env: { LOG_LEVEL: { type: "string", pattern: "debug|info|warn" } } });
    buildPackage(pkg);
    signPackage(pkg, cli.signer);
    const node = await NodeProcess.create({
      controllers: [cli.controllerKey],
      signers: [cli.signer.publicKey],
      permits: [TEST_PERMIT],
    });
    expect((await cli.berth("nodes", "add", node.address, "--tier", "paired")).code).toBe(0);
    const spec = (name: string, level: string) => {
      const path = join(cli.home, `${name}.json`);
      writeFileSync(
        path,
        JSON.stringify({
          apiVersion: "berth/v1",
          kind: "Agent",
          metadata: { name },
          spec: { target: "mesh", package: "./levels", config: { env: { LOG_LEVEL: level } } },
        }),
      );
      return path;
    };
    const refused = await cli.berth("deploy", spec("loud", "verbose; rm -rf /"));
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(/config\.env\.LOG_LEVEL: LOG_LEVEL does not match the pattern/);
    expect(refused.stdout + refused.stderr).not.toContain("rm -rf");
    const placed = await cli.berth("deploy", spec("quiet", "info"));
    expect(placed.code, placed.stdout + placed.stderr).toBe(0);
  });

  it("an inline value for an env the package types secret is refused naming the field, and reaches neither the store nor a backup; valueFrom works", async () => {
    const cli = await cliHome("berth-secret-inline-");
    const pkg = join(cli.home, "keyed");
    source(pkg, { env: { API_KEY: { type: "secret" } } });
    buildPackage(pkg);
    signPackage(pkg, cli.signer);
    writeFileSync(join(cli.home, "permits.json"), JSON.stringify([{ ...TEST_PERMIT, allow_secrets: true }]), {
      mode: 0o600,
    });
    const node = await NodeProcess.create({
      controllers: [cli.controllerKey],
      signers: [cli.signer.publicKey],
      permits: [{ ...TEST_PERMIT, allow_secrets: true }],
    });
    expect((await cli.berth("nodes", "add", node.address, "--tier", "pinned")).code).toBe(0);
    const value = `sk-inline-${process.pid}-a8d1f0c9e2b7`;
    const inline = join(cli.home, "inline.json");
    writeFileSync(
      inline,
      JSON.stringify({
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name: "inline" },
        spec: { target: "mesh", package: "./keyed", config: { env: { API_KEY: value } } },
      }),
    );
    const refused = await cli.berth("deploy", inline);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain("spec.config.env.API_KEY");
    expect(refused.stdout + refused.stderr).toContain("valueFrom");
    expect(refused.stdout + refused.stderr).not.toContain(value);

    writeFileSync(join(cli.home, "api.key"), `${value}\n`, { mode: 0o600 });
    const fromFile = join(cli.home, "fromfile.json");
    writeFileSync(
      fromFile,
      JSON.stringify({
        apiVersion: "berth/v1",
        kind: "Agent",
        metadata: { name: "fromfile" },
        spec: {
          target: "mesh",
          package: "./keyed",
          config: { env: { API_KEY: { valueFrom: { file: "./api.key" } } } },
        },
      }),
    );
    const deployed = await cli.berth("deploy", fromFile);
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);

    const agents = await cli.berth("agents", "--json");
    expect(agents.stdout).not.toContain('"inline"');
    if (cli.database === undefined) {
      const backup = join(tempDir(), "backup.tar");
      const b = await cli.berth("backup", backup, "--local");
      expect(b.code, b.stderr).toBe(0);
      expect(readFileSync(backup).includes(Buffer.from(value))).toBe(false);
      for (const f of ["controller.db", "controller.db-wal"]) {
        const path = join(cli.home, f);
        if (existsSync(path)) expect(readFileSync(path).includes(Buffer.from(value)), f).toBe(false);
      }
    }
  });
});
