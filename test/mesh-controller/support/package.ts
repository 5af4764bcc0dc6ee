/** The seed's workload as a signed package: a script that prints `placed-ok` and sleeps (spec/mesh.md §18.1). */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SigningKey } from "../../../src/core/crypto/ed25519.js";
import type { PermitRuleInput } from "../../../src/core/governance/policy.js";
import { archOfNode } from "../../../src/core/packages/manifest.js";
import { buildPackage, initPackage, signPackage } from "../../../src/mesh/packages/dir.js";

export const PROBE_SCRIPT = "#!/bin/sh\necho placed-ok\nexec sleep 30\n";
export const TEST_KIND = "agent";

export function hostArch(): "aarch64" | "armv7" | "x86_64" {
  const arch = archOfNode(process.arch);
  if (arch === null) throw new Error(`unsupported test host architecture ${process.arch}`);
  return arch;
}

export function hostOs(): "linux" | "darwin" {
  return process.platform === "darwin" ? "darwin" : "linux";
}

/** Writes, builds and signs the `probe` package in `dir`; returns its package id. */
export function probePackage(
  dir: string,
  signer: SigningKey,
  opts: { name?: string; script?: string; network?: "none" | "lan" | "egress" } = {},
): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "run.sh"), opts.script ?? PROBE_SCRIPT);
  chmodSync(join(dir, "run.sh"), 0o755);
  initPackage(dir, {
    name: opts.name ?? "probe",
    kind: TEST_KIND,
    files: ["run.sh"],
    network: opts.network ?? "egress",
    variants: [
      {
        id: `${hostArch()}-${hostOs()}`,
        arch: hostArch(),
        os: hostOs(),
        entry: { program: "run.sh", args: [] },
        requires: [],
      },
    ],
    // The surface the tests configure (issue 12): flags test/agents deploys with, and the mark the race test sets.
    config: {
      args: { "--v2": { type: "boolean" }, "--v3": { type: "boolean" } },
      env: { RACE_MARK: { type: "string" } },
    },
  });
  buildPackage(dir);
  return signPackage(dir, signer).packageId;
}

/** The seed's permit: every workload action for the test kind, egress allowed. */
export const TEST_PERMIT: PermitRuleInput = {
  id: "test-agent",
  actions: ["workload.*"],
  kinds: [TEST_KIND],
  max_network: "egress",
};
/** Scenario A's refusing node: load, unload and stop only; its start is denied by governance. */
export const NO_START_PERMIT: PermitRuleInput = {
  id: "no-start",
  actions: ["workload.load", "workload.unload", "workload.stop"],
  kinds: [TEST_KIND],
  max_network: "egress",
};

export function writeJson(path: string, value: unknown): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}
