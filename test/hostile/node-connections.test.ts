/**
 * Issue 12 (High): idle and half-sent TCP connections must not lock an authorised controller out of a node. A real
 * `berth node serve` daemon; 500 hostile sockets from the same loopback address as the controller churn (open, send
 * nothing or a partial frame, reopen the moment the node cuts them) while the controller makes 25 status calls.
 */
import { createConnection, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { parseAddr } from "../../src/mesh/transport/tcp.js";
import { cleanup, NodeProcess, requireBuild, TestController, waitFor } from "../mesh/harness.js";

/** `count` sockets that reconnect as soon as they are cut; a third send nothing, the others a frame's first bytes. */
function churn(addr: string, count: number) {
  const { host, port } = parseAddr(addr);
  const stats = { opened: 0, cut: 0 };
  const sockets = new Set<Socket>();
  let stopped = false;
  const open = (i: number) => {
    if (stopped) return;
    const s = createConnection({ host, port });
    sockets.add(s);
    s.on("connect", () => {
      stats.opened++;
      if (i % 3 === 0) return; // silent
      const header = Buffer.alloc(4);
      header.writeUInt32BE(1000, 0);
      s.write(Buffer.concat([header, Buffer.from('{"type":"req')])); // a frame that never completes
    });
    s.on("error", () => undefined);
    s.on("close", () => {
      sockets.delete(s);
      stats.cut++;
      setImmediate(() => open(i));
    });
  };
  for (let i = 0; i < count; i++) open(i);
  return {
    stats,
    stop() {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

afterAll(cleanup);

describe("connection slots under a churn of hostile connections", () => {
  it("an authorised controller's requests are all served while 500 unauthenticated connections churn from its own address", async () => {
    requireBuild();
    const ctl = new TestController();
    const node = await NodeProcess.create({ controllers: [ctl.key.publicKey], signers: [] });
    expect((await ctl.status(node)).kind).toBe("ok");
    const attack = churn(node.address, 500);
    try {
      // The attack is in full swing: every socket has been opened, and the node has cut many of them.
      await waitFor(
        () => attack.stats.opened >= 500 && attack.stats.cut >= 100,
        "the hostile sockets to connect and be cut",
        30_000,
      );
      let answered = 0;
      const failures: string[] = [];
      // A connection still in its TLS handshake is unauthenticated, so on a machine slow enough that one churn cycle
      // outlasts the handshake it can be evicted as its address's oldest unauthenticated connection (CI saw one
      // ECONNRESET at load 30): the controller shares the attackers' address. A real controller asks again on its next
      // contact; here a call cut that way is asked again at once, at most twice, and anything else fails the test.
      let resets = 0;
      for (let i = 0; i < 25; i++) {
        let r = await ctl.status(node);
        for (
          let again = 0;
          again < 2 && r.kind === "no_answer" && /connection error/.test(JSON.stringify(r));
          again++
        ) {
          resets++;
          r = await ctl.status(node);
        }
        if (r.kind === "ok") answered++;
        else failures.push(JSON.stringify(r).slice(0, 200));
      }
      expect(resets).toBeLessThan(25);
      expect({ answered, failures: failures.slice(0, 3) }).toEqual({ answered: 25, failures: [] });
      // The churn went on: at least as many sockets were cut as the attack holds open at once (500).
      expect(attack.stats.cut).toBeGreaterThanOrEqual(500);
    } finally {
      attack.stop();
    }
  }, 120_000);
});
