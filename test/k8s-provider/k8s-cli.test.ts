/** `berth k8s …` wiring over the built binary: files in YAML and JSON, refusals before any cluster contact, --json. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { builtPath } from "../support/built.js";
import { killAll, runNode } from "../support/process.js";
import { IMAGE, NSEC } from "./cases.js";

const home = mkdtempSync(join(tmpdir(), "berth-k8s-cli-"));
const env = { BERTH_HOME: join(home, "state"), HOME: home, KUBECONFIG: join(home, "no-kubeconfig") };
const berth = (args: string[]) => runNode([builtPath("src/cli/entry/main.js"), ...args], { env, cwd: tmpdir() });

function file(name: string, text: string): string {
  const p = join(home, name);
  writeFileSync(p, text);
  return p;
}

const yamlAgent = (command: string) => `agent:
  relay_url: wss://relay.example
  private_key_nsec: ${NSEC}
  launch:
    command: ${JSON.stringify(command)}
    owner_pubkey: "${"a".repeat(64)}"
provider_config:
  namespace: buzz-agents-test
  image: "${IMAGE}"
`;

afterAll(() => killAll());

describe("berth k8s", () => {
  it("deploy FILE refuses a file without launch.command before touching the cluster", async () => {
    const r = await berth(["k8s", "deploy", file("no-command.yaml", yamlAgent(""))]);
    expect(r.code).toBe(1);
    // A refusal is berth's on stderr (issue 36: one prefix, one stream), the answer's stdout left empty.
    expect(r.stderr).toMatch(/^berth: .*launch.command is required/m);
  });

  it("deploy FILE --json answers one JSON document with the catalogued error", async () => {
    const r = await berth(["k8s", "deploy", "--json", file("agent.yaml", yamlAgent("goose"))]);
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout.trim()) as { ok: boolean; error: string };
    expect(doc.ok).toBe(false);
    expect(doc.error).toMatch(/^could not load kubeconfig for context \(current\): /);
    expect(r.stdout + r.stderr).not.toContain(NSEC);
  });

  it("deploy FILE reads JSON too and applies the same refusals", async () => {
    const r = await berth([
      "k8s",
      "deploy",
      "--json",
      file(
        "agent.json",
        JSON.stringify({
          agent: { relay_url: "x", private_key_nsec: "nope", launch: { command: "goose" } },
          provider_config: { namespace: "ns", image: IMAGE },
        }),
      ),
    ]);
    expect(JSON.parse(r.stdout.trim())).toEqual({ ok: false, error: "private_key_nsec is not a decodable nsec1 key" });
  });

  it("status refuses a pod name alone and names the missing fields", async () => {
    const r = await berth(["k8s", "status", "--pubkey", "buzz-agent-7e7e9c42a91b"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/field pubkey/);
    expect(r.stderr).toMatch(/field namespace/);
  });
});
