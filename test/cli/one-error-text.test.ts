/**
 * Issue 36 item 4: one error text per mistake. Every refusal of the CLI's verbs is run both ways — through a running
 * `berth serve` on the home (found through serve.json, as a second terminal finds it) and on the home's files with
 * `--local` — and must print the same `berth: …` text on stderr, the same --json document and the same exit status.
 * The text uses the spec's own field names (never an HTTP body path) and names CLI commands, never an API route.
 * Judged from outside: the built `berth` as a real process, its stderr, stdout and exit status.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, MAIN, requireBuild, tempDir } from "../mesh/harness.js";
import { killAll, runNode } from "../support/process.js";
import { serve } from "./remote-support.js";

afterEach(async () => {
  killAll();
  await cleanup();
});

const SPECS: Record<string, string> = {
  "unknown-field.yaml":
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./pkg\n  restrat: always\n",
  "wrong-types.yaml":
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: Scout_1 }\nspec:\n  target: mesh\n  package: 42\n",
  "not-yaml.yaml": "apiVersion: [berth\n",
  "no-package-dir.yaml":
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./nopkg\n",
  "unbuilt-package.yaml":
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./empty\n",
  "missing-secret.yaml":
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: scout }\nspec:\n  target: mesh\n  package: ./empty\n  config:\n    env:\n      API_KEY: { valueFrom: { file: ./nokey } }\n",
  "k8s-missing-nsec.yaml":
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: kube }\nspec:\n  target: kubernetes\n  image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000\n  kubernetes:\n    relay_url: wss://relay.example\n    nsec_file: ./nope.nsec\n    command: agent\n",
  "k8s-bad-section.yaml":
    "apiVersion: berth/v1\nkind: Agent\nmetadata: { name: kube }\nspec:\n  target: kubernetes\n  kubernetes:\n    image: busybox\n    nsec_file: ./x\n",
};

/** Bad invocations of every verb that can go through a server: the mistake, and the exit status it must have. */
const REFUSALS: Array<{ args: string[]; code: 1 | 2; says?: RegExp }> = [
  {
    args: ["deploy", "unknown-field.yaml"],
    code: 2,
    says: /unknown-field\.yaml: spec\.restrat: unknown field \(did you mean restart\?\)/,
  },
  {
    args: ["deploy", "wrong-types.yaml"],
    code: 2,
    says: /wrong-types\.yaml: metadata\.name: .*\n.*wrong-types\.yaml: spec\.package: /s,
  },
  { args: ["deploy", "not-yaml.yaml"], code: 2, says: /not valid YAML or JSON/ },
  { args: ["deploy", "no-such-file.yaml"], code: 2, says: /no-such-file\.yaml does not exist/ },
  {
    args: ["deploy", "no-package-dir.yaml"],
    code: 2,
    says: /no-package-dir\.yaml: spec\.package: no package directory .*nopkg/,
  },
  { args: ["deploy", "unbuilt-package.yaml"], code: 2, says: /spec\.package: .*empty has no berth-package\.json/ },
  {
    args: ["deploy", "missing-secret.yaml"],
    code: 1,
    says: /spec\.config\.env\.API_KEY\.valueFrom\.file: .*nokey does not exist/,
  },
  {
    args: ["deploy", "k8s-missing-nsec.yaml"],
    code: 2,
    says: /spec\.kubernetes\.nsec_file: .*nope\.nsec does not exist/,
  },
  { args: ["deploy", "k8s-bad-section.yaml"], code: 2, says: /spec\.kubernetes\.relay_url: missing/ },
  {
    args: ["agent", "replace", "nobody", "--file", "unknown-field.yaml"],
    code: 2,
    says: /spec\.restrat: unknown field/,
  },
  ...["status", "logs", "stop", "start", "replace", "purge", "delete"].map((verb) => ({
    args: ["agent", verb, "nobody"],
    code: 1 as const,
    says: /no agent "nobody" was deployed/,
  })),
  ...["status", "logs", "stop", "start", "unload"].map((verb) => ({
    args: ["instance", verb, "probe-000000000000"],
    code: 1 as const,
    says: /`berth instances` lists/,
  })),
  { args: ["place", "nopkg", "--name", "x"], code: 1, says: /place refused/ },
  { args: ["place", "nopkg", "--pin", "abc"], code: 2, says: /--pin/ },
  { args: ["nodes", "add", "nohost:notaport"], code: 2, says: /must be HOST:PORT/ },
  { args: ["nodes", "tier", "0123456789abcdef0123456789abcdef", "pinned"], code: 1, says: /no known node/ },
  { args: ["nodes", "tier", "0123456789abcdef0123456789abcdef", "bogus"], code: 2 },
  { args: ["nodes", "remove", "nosuch"], code: 1, says: /no known node nosuch/ },
  ...["cordon", "uncordon", "forget", "drain", "rehome"].map((verb) => ({
    args: ["node", verb, "nosuch", "--reason", "test"],
    code: 1 as const,
    says: /no known node nosuch/,
  })),
  { args: ["agents", "--bogus"], code: 2, says: /unknown option '--bogus'/ },
  { args: ["audit", "tail", "-n", "0"], code: 2 },
  { args: ["audit", "verify", "--pubkey", "00"], code: 2 },
  {
    args: ["k8s", "deploy", "k8s-missing-nsec.yaml"],
    code: 2,
    says: /is an agent spec \(kind: Agent\): deploy it with `berth deploy/,
  },
  { args: ["backup", "/nonexistent/berth/x.db"], code: 2 },
];

describe("one error text per mistake", () => {
  it("every refusal reads the same, in the spec's field names and with the same exit status, through a berth serve and on the files", async () => {
    requireBuild();
    const home = tempDir("berth-one-text-home-");
    const work = tempDir("berth-one-text-work-");
    const env = { BERTH_HOME: home, KUBECONFIG: "/nonexistent/berth-one-text", NO_COLOR: "1" };
    const berth = (args: readonly string[]) => runNode([MAIN, ...args], { env, cwd: work });
    expect((await berth(["keys", "new"])).code).toBe(0);
    for (const [name, text] of Object.entries(SPECS)) writeFileSync(join(work, name), text);
    mkdirSync(join(work, "empty"));
    await serve(home);

    for (const c of REFUSALS) {
      const what = `berth ${c.args.join(" ")}`;
      const [through, local, throughDoc, localDoc] = await Promise.all([
        berth(c.args),
        berth([...c.args, "--local"]),
        berth([...c.args, "--json"]),
        berth([...c.args, "--json", "--local"]),
      ]);
      expect(
        [through.code, local.code],
        `${what}: exit status (through ${through.stderr} / local ${local.stderr})`,
      ).toEqual([c.code, c.code]);
      expect(through.stderr, `${what}: the same text both ways`).toBe(local.stderr);
      expect(through.stderr, `${what}: one prefix`).toMatch(/^berth: /);
      expect(through.stderr, `${what}: CLI advice, never an HTTP route or body path`).not.toMatch(
        /POST \/api|GET \/api|body\./,
      );
      if (c.says) expect(through.stderr, what).toMatch(c.says);
      expect(throughDoc.stdout, `${what} --json: the same document both ways`).toBe(localDoc.stdout);
      expect(JSON.parse(throughDoc.stdout), what).toMatchObject({ ok: false });
    }
  }, 600_000);
});
