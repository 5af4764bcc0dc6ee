/**
 * Issue 33 item 5, denials say why, with real `berth node serve` daemons: what a person reads when a node's permit
 * refuses a placement is the controller's own answer (the attempt's reason, the explain), and it names the rule and
 * the field that did not match.
 *
 * - a package declaring `lan` on a node whose permit keeps the default `max_network: lan`: the node runs it as a native
 *   process without a network namespace, judges it `egress`, and the refusal says exactly that (on main: only
 *   "default deny: no permit rule matches");
 * - a node whose permits.json is invalid: the refusal names the file and the field (on main: the same bare default
 *   deny, the reason only in the node's chain).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanupProcesses, processFixture } from "./support/processes.js";
import { TEST_KIND } from "./support/package.js";

vi.setConfig({ testTimeout: 90_000 });

afterEach(async () => {
  await cleanupProcesses();
});

/** The default `max_network` (lan): what an operator following docs/mesh.md without raising it writes. */
const LAN_PERMIT = { id: "agents-on-the-lan", actions: ["workload.*"], kinds: [TEST_KIND] };

describe("a node's refusal names the rule and the field that did not match (real daemons)", () => {
  it("a lan package on a node without a network namespace for it is refused naming max_network, the declared lan and the egress it is judged", async () => {
    const fx = await processFixture({ permits: [[LAN_PERMIT], [LAN_PERMIT]], network: "lan" });
    const ctl = fx.controller;
    expect((await ctl.addTarget(fx.first.address, "paired")).ok).toBe(true);
    const r = await ctl.place({
      package: fx.pkgDir,
      name: `lan${process.pid}`,
      config: { mode: "service" },
      pin: fx.first.nodeId,
    });
    expect(r.placed).toBeNull();
    const attempt = r.attempts[0]!;
    expect(attempt.outcome, r.explain).toBe("refused");
    expect(attempt.code).toBe("governance");
    const why = attempt.reason ?? "";
    expect(why).toContain("rule agents-on-the-lan did not match on max_network");
    expect(why).toContain("the package declares lan");
    expect(why).toContain("judged egress");
    expect(why).toContain("raise the rule's max_network to egress");
    // The person's view: the explain carries the same words.
    expect(r.explain).toContain("did not match on max_network");
  });

  it("an invalid permits.json on the node is named in the refusal, with the field that is wrong", async () => {
    const fx = await processFixture();
    writeFileSync(
      join(fx.first.dataDir, "permits.json"),
      JSON.stringify([{ id: "typo", actions: ["workload.*"], kinds: [TEST_KIND], max_network: "internet" }]),
    );
    const ctl = fx.controller;
    expect((await ctl.addTarget(fx.first.address, "paired")).ok).toBe(true);
    const r = await ctl.place({
      package: fx.pkgDir,
      name: `typo${process.pid}`,
      config: { mode: "service" },
      pin: fx.first.nodeId,
    });
    expect(r.placed).toBeNull();
    const why = r.attempts[0]?.reason ?? "";
    expect(why, r.explain).toContain("the permits file loads no rule: permits.json");
    expect(why).toContain("max_network");
  });
});
