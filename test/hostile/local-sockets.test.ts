/**
 * Issue 33 item 7: a `network: "none"` agent reaches nothing, the machine's own unix sockets included. Real node
 * daemons, real agents; the verdict is the listener's: how many connections the test's own unix sockets (one on the
 * file system, one abstract) accepted. The agent is a Node script (the test's own `node` binary), so the probe is the
 * same code whether the socket is reachable or not.
 */
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { cleanupConfined, confinedNode as node, factsOf } from "../mesh/confined-node.js";
import {
  makePackage,
  type NodeProcess,
  ok,
  requireBuild,
  type TestController,
  tempDir,
  waitFor,
} from "../mesh/harness.js";

vi.setConfig({ testTimeout: 120_000 });
beforeAll(requireBuild);

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) s.close();
  await cleanupConfined();
});

/** A unix listener counting the connections it accepts: the judge. */
async function unixListener(path: string): Promise<{ accepted: () => number }> {
  let accepted = 0;
  const server = createServer((s) => {
    accepted++;
    s.destroy();
  });
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, resolve);
  });
  return { accepted: () => accepted };
}

/** The agent: connects to each socket, prints `<label>:connected` or `<label>:<error code>`, then idles. */
function dialler(targets: Readonly<Record<string, string>>): string {
  const js = `const net=require("net");const t=${JSON.stringify(targets)};let n=0;const out={};for(const [k,p] of Object.entries(t)){const s=net.connect(p);const done=(v)=>{out[k]=v;s.destroy();if(++n===Object.keys(t).length){console.log(Object.keys(t).sort().map(x=>x+":"+out[x]).join(" "));}};s.on("connect",()=>done("connected"));s.on("error",(e)=>done(e.code));}`;
  return `#!/bin/sh\n'${process.execPath}' -e '${js.replace(/'/g, `'\\''`)}'\nexec sleep 300\n`;
}

async function verdictOf(ctl: TestController, n: NodeProcess, id: string): Promise<string> {
  return waitFor(
    async () => {
      const out = ok(await ctl.verb(n, "logs", { instance_id: id })).stdout as string;
      return out.includes("\n") ? out.trim() : undefined;
    },
    "the agent's verdict",
    30_000,
  );
}

const gateFed = (n: NodeProcess) =>
  n
    .events({ source: "gate", kind: "workload.load" })
    .map((e) => ((e.payload as JsonObject).workload as JsonObject).network);

describe("network none and the machine's unix sockets", () => {
  it("a network none agent cannot connect to a unix socket on the file system or an abstract one; the listeners accept nothing", async () => {
    const path = join(tempDir("berth-sock-"), "db.sock");
    const abstract = `\0berth-test-${process.pid}-${Date.now()}`;
    const onDisk = await unixListener(path);
    const named = await unixListener(abstract);
    const { ctl, signer, node: n } = await node();
    const placed = ok(
      await ctl.place(
        n,
        makePackage(signer, { script: dialler({ abstract, disk: path }), network: "none", name: "sealed" }).dir,
        { name: "sealed" },
      ),
    );
    expect(await verdictOf(ctl, n, placed.instance_id as string)).toBe("abstract:EACCES disk:EACCES");
    expect(onDisk.accepted()).toBe(0);
    expect(named.accepted()).toBe(0);
    expect((await factsOf(ctl, n)).confinement).toMatchObject({
      network_none: "enforced",
      network_namespace: true,
      local_sockets: "blocked",
      network_none_judged_as: "none",
    });
    expect(gateFed(n)).toEqual(["none"]);
    // The same probe as an egress agent on the same node reaches both: the listeners and the probe work.
    const open = ok(
      await ctl.place(
        n,
        makePackage(signer, { script: dialler({ abstract, disk: path }), network: "egress", name: "open" }).dir,
        { name: "open" },
      ),
    );
    expect(await verdictOf(ctl, n, open.instance_id as string)).toBe("abstract:connected disk:connected");
    await waitFor(
      () => onDisk.accepted() === 1 && named.accepted() === 1,
      "both listeners to see the egress agent",
      30_000,
    );
  });

  it("a node that does not seal local sockets says network_none not-enforced and feeds its gate lan, so a permit capped at none refuses", async () => {
    const capped = [{ id: "none-only", actions: ["workload.*"], kinds: ["probe"], max_network: "none" as const }];
    const { ctl, signer, node: n } = await node({ permits: capped, config: { confinement: { local_sockets: "off" } } });
    expect((await factsOf(ctl, n)).confinement).toMatchObject({
      network_none: "not-enforced",
      network_namespace: true,
      local_sockets: "reachable",
      network_none_judged_as: "lan",
    });
    expect(await ctl.place(n, makePackage(signer, { network: "none" }).dir)).toMatchObject({
      kind: "refused",
      code: "governance",
    });
    expect(gateFed(n)).toEqual(["lan"]);
  });

  it("on a node that does not seal, a network none agent does reach a unix socket (what the facts' lan says)", async () => {
    const path = join(tempDir("berth-sock-"), "db.sock");
    const onDisk = await unixListener(path);
    const lan = [{ id: "lan", actions: ["workload.*"], kinds: ["probe"], max_network: "lan" as const }];
    const { ctl, signer, node: n } = await node({ permits: lan, config: { confinement: { local_sockets: "off" } } });
    const placed = ok(
      await ctl.place(
        n,
        makePackage(signer, { script: dialler({ disk: path }), network: "none", name: "unsealed" }).dir,
        { name: "unsealed" },
      ),
    );
    expect(await verdictOf(ctl, n, placed.instance_id as string)).toBe("disk:connected");
    await waitFor(() => onDisk.accepted() === 1, "the listener to see the unsealed agent", 30_000);
  });
});
