/**
 * Issue 17 with a real `berth node serve --transport tls`: a controller over TLS places a package and reads its
 * logs through a byte-logging proxy; the tap sees neither a value planted in the package nor the agent's output.
 * A controller the node does not authorise is cut at the handshake, chained once with the code `unauthorized`; an
 * explicit `--transport plaintext` start is warned and chained as `transport.plaintext`.
 */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { ALLOW_ALL, cleanup, makePackage, NodeProcess, ok, requireBuild, waitFor } from "./harness.js";
import { tap } from "./transport-tap.js";

afterAll(cleanup);

describe("a node daemon serving TLS", () => {
  it("places and shows logs over TLS, and a tap on the wire sees neither the planted value nor the agent's output", async () => {
    requireBuild();
    const controller = generateSigningKey();
    const signer = generateSigningKey();
    const planted = `PLANTED${randomBytes(6).toString("hex")}`;
    const output = `OUTPUT${randomBytes(6).toString("hex")}`;
    const pkg = makePackage(signer, { script: `#!/bin/sh\n# ${planted}\necho ${output}\nexec sleep 30\n` });
    const node = await NodeProcess.create({
      controllers: [controller.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
      extraArgs: ["--transport", "tls"],
    });
    const wire = await tap(node.address);
    try {
      const client = new NodeClient({
        key: controller,
        connector: new TlsConnector({ identity: controller, expectedKey: () => node.publicKey }),
        timeoutMs: 15_000,
        authority: () => ({ store_id: "5".repeat(32), epoch: 0 }),
      });
      const target: TargetRef = { ...node.target(), addr: wire.address };
      const source = new PackageDirSource(pkg.dir);
      const placed = ok(
        await client.call(
          target,
          "place",
          {
            package_id: source.packageId,
            name: "probe",
            variant: "any-linux",
            config: { mode: "service", args: [], env: {} },
          },
          { decisionId: randomBytes(32).toString("hex"), package: source },
        ),
      );
      const logs = await waitFor(async () => {
        const r = ok(
          await client.call(target, "logs", { instance_id: placed.instance_id as string, tail_bytes: 4096 }),
        );
        return JSON.stringify(r).includes(output) ? r : undefined;
      }, "the agent's output in its logs");
      expect(JSON.stringify(logs)).toContain(output);
      const seen = wire.seen();
      expect(seen.length).toBeGreaterThan(1000);
      expect(seen.includes(Buffer.from(planted))).toBe(false);
      expect(seen.includes(Buffer.from(output))).toBe(false);
      expect(seen.includes(Buffer.from('"type":"request"'))).toBe(false);
    } finally {
      wire.close();
    }
  }, 90_000);

  it("cuts a controller it does not authorise at the handshake and chains it once as unauthorized", async () => {
    const node = await NodeProcess.create({
      controllers: [generateSigningKey().publicKey],
      signers: [],
      extraArgs: ["--transport", "tls"],
    });
    const stranger = generateSigningKey();
    const client = new NodeClient({
      key: stranger,
      connector: new TlsConnector({ identity: stranger, expectedKey: () => node.publicKey }),
      timeoutMs: 5_000,
    });
    for (let i = 0; i < 3; i++)
      expect(
        (await client.call(node.target(), "status", { instance_id: null, include_departed: false })).kind,
      ).not.toBe("ok");
    const refusals = await waitFor(() => {
      const found = node.events({ kind: "workload.refuse", phase: "transport" });
      return found.length > 0 ? found : undefined;
    }, "the transport refusal on the node chain");
    expect(refusals).toHaveLength(1);
    expect(refusals[0]?.payload).toMatchObject({ code: "unauthorized" });
  }, 60_000);

  it("warns and chains transport.plaintext when started with --transport plaintext", async () => {
    const node = await NodeProcess.create({ controllers: [], signers: [], extraArgs: ["--transport", "plaintext"] });
    await waitFor(() => node.stderr.includes("warning: plaintext transport"), "the plaintext warning");
    expect(node.events({ kind: "transport.plaintext" })).toHaveLength(1);
  }, 60_000);
});
