/**
 * Issue 12 "a controller runs code no trusted signer signed, through config.env (and config.args)": against a real
 * node daemon, a placement may set only what the signed statement declares, and never a loader or interpreter hook,
 * even one the statement declares. Judged from outside: a marker file the injected code would write never appears.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { buildPackage, initPackage } from "../../src/mesh/packages/dir.js";
import {
  ALLOW_ALL,
  cleanup,
  makePackage,
  NodeProcess,
  ok,
  processesWithEnv,
  requireBuild,
  rowsOf,
  TestController,
  tempDir,
  waitFor,
} from "../mesh/harness.js";

vi.setConfig({ testTimeout: 90_000 });
beforeAll(requireBuild);
afterEach(cleanup);

async function setup() {
  const ctl = new TestController();
  const signer = generateSigningKey();
  const node = await NodeProcess.create({
    controllers: [ctl.key.publicKey],
    signers: [signer.publicKey],
    permits: ALLOW_ALL,
  });
  return { ctl, signer, node };
}

async function expectConfigRefused(
  node: NodeProcess,
  ctl: TestController,
  r: Awaited<ReturnType<TestController["place"]>>,
  field: string,
  decisionId: string,
) {
  expect(r).toMatchObject({ kind: "refused", code: "config_refused" });
  expect((r as { reason: string }).reason.startsWith(`${field}: `)).toBe(true);
  expect(rowsOf(await ctl.status(node))).toEqual([]);
  expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`)).toEqual([]);
  expect(readdirSync(join(node.dataDir, "instances"))).toEqual([]);
  // chained on the node, naming the field
  const refusals = node
    .events({ source: "node", kind: "workload.refuse" })
    .filter((e) => e.payload.decision_id === decisionId);
  expect(refusals.map((e) => [e.payload.code, String(e.payload.reason).split(":")[0]])).toEqual([
    ["config_refused", field],
  ]);
}

describe("a placement's configuration is the signed surface and nothing else", () => {
  it("refuses NODE_OPTIONS=--import=data:… on a signed Node.js package, and the injected code never runs", async () => {
    const { ctl, signer, node } = await setup();
    const marker = join(tempDir("berth-marker-"), "pwned");
    const script = `#!/bin/sh\nexec ${process.execPath} -e "setInterval(() => {}, 1000)"\n`;
    const pkg = makePackage(signer, { script, config: { env: { LOG_LEVEL: { type: "string" } } } });
    const inject = `--import=data:text/javascript,import{writeFileSync}from"node:fs";writeFileSync(${JSON.stringify(marker)},"x")`;
    const decisionId = ctl.decisionId();
    const r = await ctl.place(node, pkg.dir, { decisionId, env: { NODE_OPTIONS: inject } });
    await expectConfigRefused(node, ctl, r, "config.env.NODE_OPTIONS", decisionId);
    // A legitimate placement of the same package runs, so the marker would have had its chance.
    const fine = ok(await ctl.place(node, pkg.dir, { env: { LOG_LEVEL: "debug" } }));
    await waitFor(
      () => processesWithEnv(`BERTH_INSTANCE_ID=${fine.instance_id}`).length > 0,
      "the legitimate instance to run",
    );
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses BASH_ENV on a signed bash script, and the command in it never runs", async () => {
    const { ctl, signer, node } = await setup();
    const marker = join(tempDir("berth-marker-"), "pwned");
    const pkg = makePackage(signer, { script: "#!/bin/bash\nexec sleep 30\n" });
    const decisionId = ctl.decisionId();
    const r = await ctl.place(node, pkg.dir, { decisionId, env: { BASH_ENV: `$(touch ${marker})` } });
    await expectConfigRefused(node, ctl, r, "config.env.BASH_ENV", decisionId);
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses an env name or a flag the statement does not declare, and a value of the wrong type, naming the field", async () => {
    const { ctl, signer, node } = await setup();
    const pkg = makePackage(signer, {
      config: { env: { RETRIES: { type: "integer" } }, args: { "--watch": { type: "string" } } },
    });
    const cases: Array<[{ env?: Record<string, string>; args?: string[] }, string]> = [
      [{ env: { OTHER: "1" } }, "config.env.OTHER"],
      [{ env: { RETRIES: "many" } }, "config.env.RETRIES"],
      [{ args: ["--watch", "inbox", "--exec", "x"] }, "config.args[2]"],
      [{ args: ["positional"] }, "config.args[0]"],
      [{ args: ["--watch"] }, "config.args[0]"],
      [{ env: { LD_PRELOAD: "/tmp/x.so" } }, "config.env.LD_PRELOAD"],
      [{ env: { PATH: "/tmp" } }, "config.env.PATH"],
    ];
    for (const [config, field] of cases) {
      const decisionId = ctl.decisionId();
      await expectConfigRefused(
        node,
        ctl,
        await ctl.place(node, pkg.dir, { decisionId, ...config }),
        field,
        decisionId,
      );
    }
    // What the surface declares is accepted.
    ok(await ctl.place(node, pkg.dir, { env: { RETRIES: "3" }, args: ["--watch=inbox"] }));
  });

  it("a package without a surface accepts no config at all", async () => {
    const { ctl, signer, node } = await setup();
    const pkg = makePackage(signer);
    const decisionId = ctl.decisionId();
    await expectConfigRefused(
      node,
      ctl,
      await ctl.place(node, pkg.dir, { decisionId, env: { GREETING: "hi" } }),
      "config.env.GREETING",
      decisionId,
    );
    ok(await ctl.place(node, pkg.dir));
  });

  it("berth package build refuses a surface that declares a loader or interpreter hook", () => {
    for (const name of [
      "NODE_OPTIONS",
      "LD_PRELOAD",
      "BASH_ENV",
      "PYTHONSTARTUP",
      "PERL5OPT",
      "JAVA_TOOL_OPTIONS",
      "HOME",
    ]) {
      const dir = tempDir("berth-pkg-");
      initPackage(dir, {
        name: "probe",
        files: ["run.sh"],
        variants: [{ id: "any-linux", arch: "any", os: "linux", entry: { program: "run.sh", args: [] }, requires: [] }],
        config: { env: { [name]: { type: "string" } } },
      });
      expect(() => buildPackage(dir), name).toThrow(new RegExp(`config\\.env\\.${name}: ${name} is a \\w+ hook`));
    }
  });
});
