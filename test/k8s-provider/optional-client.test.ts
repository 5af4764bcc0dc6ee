/**
 * Issue 13 ("a package that installs"): a node daemon (a Raspberry Pi) should not need the Kubernetes client, so it can
 * be an optionalDependency. `@kubernetes/client-node` is loaded only when a Kubernetes verb connects (connect.ts's
 * dynamic import). A loader hook hides the package and logs every attempt to resolve it: `berth --version` and
 * `berth node serve` run with it hidden and never ask for it; a Kubernetes verb does (the hook's positive control).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { NSEC } from "./cases.js";

const dir = mkdtempSync(join(tmpdir(), "berth-optional-k8s-"));
const loads = join(dir, "loads.txt");
writeFileSync(
  join(dir, "hide-k8s.mjs"),
  `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  if (specifier === "@kubernetes/client-node" || specifier.startsWith("@kubernetes/client-node/")) {
    appendFileSync(${JSON.stringify(loads)}, specifier + "\\n");
    throw Object.assign(new Error("Cannot find package '" + specifier + "' (hidden by the test)"), { code: "ERR_MODULE_NOT_FOUND" });
  }
  return next(specifier, context);
}
`,
);
writeFileSync(
  join(dir, "register.mjs"),
  `import { register } from "node:module";\nregister(${JSON.stringify(`file://${join(dir, "hide-k8s.mjs")}`)});\n`,
);
const hidden = ["--import", `file://${join(dir, "register.mjs")}`];
const env = { BERTH_HOME: join(dir, "home"), HOME: dir, KUBECONFIG: join(dir, "no-kubeconfig") };
const asked = () => (existsSync(loads) ? readFileSync(loads, "utf8") : "");

afterAll(() => killAll());

describe("the Kubernetes client is optional for everything but Kubernetes", () => {
  it("berth --version runs with the client hidden and never asks for it", async () => {
    const r = await runNode([...hidden, builtPath("src/cli/entry/main.js"), "--version"], { env, cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(asked()).toBe("");
  });

  it("berth node serve starts and answers with the client hidden, and never asks for it", async () => {
    const data = join(dir, "node");
    const init = await runNode(
      [...hidden, builtPath("src/cli/entry/main.js"), "node", "init", "--data-dir", data, "--json"],
      { env, cwd: dir },
    );
    expect(init.code, init.stderr).toBe(0);
    const child = spawn(
      process.execPath,
      [...hidden, builtPath("src/cli/entry/main.js"), "node", "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
      {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    let err = "";
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const line = out.split("\n").find((l) => l.startsWith("{"));
        if (line && out.includes("\n")) resolve(JSON.parse(line) as Record<string, unknown>);
      });
      child.once("exit", (code) => reject(new Error(`node serve exited with ${code}: ${err}`)));
    });
    expect(ready.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await gone;
    expect(asked()).toBe("");
  }, 60_000);

  it("a Kubernetes deploy does ask for it (the hook sees what it hides)", async () => {
    const request = {
      op: "deploy",
      agent: { relay_url: "wss://relay.example", private_key_nsec: NSEC, launch: { owner_pubkey: "a".repeat(64) } },
      provider_config: { namespace: "buzz-agents-test", image: `ghcr.io/block/buzz-sprig@sha256:${"1".repeat(64)}` },
    };
    const r = await runNode([...hidden, builtPath("src/cli/entry/main.js"), "provider", "kubernetes"], {
      env,
      cwd: dir,
      input: JSON.stringify(request),
    });
    const answer = JSON.parse(r.stdout.trim()) as { ok: boolean; error: string };
    expect(answer.ok).toBe(false);
    expect(answer.error).toMatch(
      /^could not load kubeconfig for context \(current\): the Kubernetes client is not installed/,
    );
    expect(asked()).toContain("@kubernetes/client-node");
  }, 60_000);
});
