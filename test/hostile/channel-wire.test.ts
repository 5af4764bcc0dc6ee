/**
 * Issue 17 with real daemons and the controller's own connector (ControllerConnector, TLS by default): what a tap on
 * the wire sees during a `place` carrying a planted env value and a 300 KB package file, and a `logs` call; what
 * happens when a man in the middle swaps in another node's endpoint; and that plaintext needs both sides opted in.
 */
import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import type { SigningKey } from "../../src/core/crypto/ed25519.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { ControllerConnector, type PlaintextOptIn } from "../../src/mesh/client/connector.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { runNode } from "../support/process.js";
import { ALLOW_ALL, cleanup, MAIN, makePackage, NodeProcess, requireBuild, tempDir, waitFor } from "../mesh/harness.js";
import { type ChannelTap, channelTap } from "./channel-tap.js";

vi.setConfig({ testTimeout: 120_000 });

const taps: ChannelTap[] = [];
const controllers: MeshController[] = [];
afterEach(async () => {
  for (const t of taps.splice(0)) t.close();
  for (const c of controllers.splice(0)) await c.close();
});
afterAll(cleanup);

/** A controller home trusting `signer` with the harness's permits, opened with the production connector. */
function controllerHome(signer: SigningKey, key = generateSigningKey()) {
  const dir = tempDir("berth-channel-ctl-");
  writeFileSync(join(dir, "signers.json"), JSON.stringify([{ key: signer.publicKey, name: "test" }]));
  writeFileSync(join(dir, "permits.json"), JSON.stringify(ALLOW_ALL));
  return {
    key,
    async open(plaintext?: PlaintextOptIn): Promise<MeshController> {
      const connector = new ControllerConnector({
        identity: key,
        connectTimeoutMs: 2_000,
        ...(plaintext ? { plaintext } : {}),
      });
      const c = await MeshController.open({
        dataDir: dir,
        key,
        connector,
        timeouts: { callMs: 5_000, placeMs: 30_000, describeMs: 3_000 },
      });
      controllers.push(c);
      return c;
    },
  };
}

async function tapped(upstream: string): Promise<ChannelTap> {
  const t = await channelTap(upstream);
  taps.push(t);
  return t;
}

describe("the control channel seen from the wire", () => {
  it("a place with a planted env value and a 300 KB package file, then logs: the tap sees none of it in clear, the agent got the value", async () => {
    requireBuild();
    const signer = generateSigningKey();
    const home = controllerHome(signer);
    const secret = `PLANTED-${randomBytes(12).toString("hex")}`;
    const output = `OUTPUT-${randomBytes(12).toString("hex")}`;
    const filler = randomBytes(150_000).toString("hex"); // 300 KB of script: more than one TLS record and one read
    const script = `#!/bin/sh\n# ${filler}\necho "${output} token-sha256=$(printf %s "$API_TOKEN" | sha256sum | cut -c1-64)"\nexec sleep 60\n`;
    const pkg = makePackage(signer, { script, config: { env: { API_TOKEN: { type: "secret" } } } });
    const node = await NodeProcess.create({
      controllers: [home.key.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const wire = await tapped(node.address);
    const controller = await home.open();
    const added = await controller.addTarget(wire.address, "paired");
    expect(added.ok, JSON.stringify(added)).toBe(true);

    const report = await controller.place({
      package: pkg.dir,
      name: "wire",
      config: { mode: "service", args: [], env: { API_TOKEN: secret } },
    });
    expect(report.placed, JSON.stringify(report.attempts)).not.toBeNull();
    const instance = report.placed?.instance_id as string;
    const digest = createHash("sha256").update(secret).digest("hex");
    const logs = await waitFor(
      async () => {
        const r = await controller.instance("logs", instance, { tail_bytes: 65_536 });
        return r.kind === "ok" && String(r.result.stdout).includes(output) ? r.result : undefined;
      },
      "the agent's output in its logs",
      30_000,
    );
    // The agent was given the value (it printed its digest), and the logs call carried the output back.
    expect(String(logs.stdout)).toContain(`token-sha256=${digest}`);

    const seen = wire.seen();
    expect(seen.length, "the package file crossed the tap").toBeGreaterThan(300_000);
    for (const [what, needle] of [
      ["the planted value", secret],
      ["the agent's output", output],
      ["the value's digest the agent printed", digest],
      ["the package file", filler.slice(40_000, 40_064)],
      ["a frame's JSON", '"type":"request"'],
      ["the env name", "API_TOKEN"],
    ] as const) {
      expect(seen.includes(Buffer.from(needle)), `${what} is not on the wire`).toBe(false);
    }
    // The controller's chain names the env, never its value.
    const chained = JSON.stringify(await controller.store.events());
    expect(chained).toContain("API_TOKEN");
    expect(chained).not.toContain(secret);
  });

  it("a proxy that swaps in another node's endpoint is refused before anything is sent, chained once as peer.key_refused", async () => {
    requireBuild();
    const signer = generateSigningKey();
    const home = controllerHome(signer);
    const spec = { controllers: [home.key.publicKey], signers: [signer.publicKey], permits: ALLOW_ALL };
    const [genuine, impostor] = await Promise.all([NodeProcess.create(spec), NodeProcess.create(spec)]);
    const wire = await tapped(genuine.address);
    const controller = await home.open();
    expect((await controller.addTarget(wire.address, "paired")).ok).toBe(true);

    wire.retarget(impostor.address);
    const pkg = makePackage(signer);
    const refreshed = await controller.addTarget(wire.address, "paired");
    expect(refreshed.ok).toBe(false);
    const report = await controller.place({
      package: pkg.dir,
      name: "swapped",
      config: { mode: "service", args: [], env: {} },
    });
    expect(report.placed).toBeNull();
    expect(
      report.attempts.every((a) => a.outcome !== "placed" && a.outcome !== "indeterminate"),
      JSON.stringify(report.attempts),
    ).toBe(true);
    await controller.addTarget(wire.address, "paired");

    const refusals = await controller.store.events({ kind: "peer.key_refused" });
    expect(refusals, "chained once for the offered key, however many calls met it").toHaveLength(1);
    expect(refusals[0]).toMatchObject({
      addr: wire.address,
      expected_key: genuine.publicKey,
      offered_key: impostor.publicKey,
    });
    const target = (await controller.targets()).find((t) => t.addr === wire.address);
    expect(target?.key).toBe(genuine.publicKey);
    expect(target?.error ?? "").toContain("TLS handshake");

    // The impostor never received a request: it holds nothing and chained nothing about this controller.
    const observer = new NodeClient({
      key: home.key,
      connector: new TlsConnector({ identity: home.key }),
      timeoutMs: 5_000,
    });
    const status = await observer.call(impostor.target(), "status", { instance_id: null, include_departed: false });
    expect(status.kind).toBe("ok");
    expect(status.kind === "ok" ? (status.result.rows as unknown[]).length : -1).toBe(0);
    expect(impostor.events({ kind: "workload.place" })).toHaveLength(0);
  });

  it("a node serving plaintext only is refused unless the controller opted in too, and a TLS node is refused to a controller speaking plaintext", async () => {
    requireBuild();
    const cliHome = tempDir("berth-channel-cli-");
    const berth = (...args: string[]) => runNode([MAIN, ...args], { env: { BERTH_HOME: cliHome } });
    const keys = await berth("keys", "new", "--json");
    expect(keys.code, keys.stderr).toBe(0);
    const cliKey = (JSON.parse(keys.stdout) as { public_key: string }).public_key;
    const signer = generateSigningKey();
    const home = controllerHome(signer);
    const plain = await NodeProcess.create({
      controllers: [home.key.publicKey, cliKey],
      signers: [],
      extraArgs: ["--transport", "plaintext"],
    });
    const tls = await NodeProcess.create({ controllers: [home.key.publicKey], signers: [] });

    const strict = await home.open();
    const refused = await strict.addTarget(plain.address, "paired");
    expect(refused.ok ? "" : refused.error).toContain(
      "a node serving plaintext only is refused unless both sides opted in",
    );
    await strict.close();
    controllers.splice(controllers.indexOf(strict), 1);

    const optedIn = await home.open({ all: false, nodes: [plain.address, tls.address] });
    expect((await optedIn.addTarget(plain.address, "paired")).ok, "both sides opted in").toBe(true);
    const downgraded = await optedIn.addTarget(tls.address, "paired");
    expect(downgraded.ok, "a TLS node never answers plaintext").toBe(false);

    // The CLI: transport.json opts in; every verb that talks to nodes warns (a plain list reads the store and talks to
    // none, issue 35: `--refresh` asks them), the chain records the opt-in once while it is unchanged.
    writeFileSync(join(cliHome, "transport.json"), JSON.stringify({ plaintext_nodes: [plain.address] }));
    const add = await berth("nodes", "add", plain.address, "--tier", "paired", "--json");
    expect(add.code, add.stderr).toBe(0);
    expect(add.stderr).toContain(`warning: plaintext transport to ${plain.address}`);
    const list = await berth("nodes", "list", "--refresh", "--json");
    expect(list.stderr).toContain("warning: plaintext transport");
    const exported = await berth("audit", "export", "--json", "--db", join(cliHome, "controller.db"));
    const events = (JSON.parse(exported.stdout) as { events: Array<{ kind: string; payload: unknown }> }).events.filter(
      (e) => e.kind === "transport.plaintext",
    );
    expect(events).toHaveLength(1);
    expect(events[0]?.payload).toMatchObject({ all: false, nodes: [plain.address] });
    writeFileSync(join(cliHome, "transport.json"), JSON.stringify({ plaintext_nodes: ["not an address"] }));
    const broken = await berth("nodes", "list", "--refresh", "--json");
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toContain("transport.json.plaintext_nodes.0: must be a node address");
  });
});
