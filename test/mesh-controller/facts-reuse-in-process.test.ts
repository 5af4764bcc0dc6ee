/**
 * Issue 19 (spec/mesh.md §9.2 step 3): a placement describes only the targets whose facts this controller process
 * cannot reuse: described more than 10 s ago, never described, or suspect since a failed contact. Two real node
 * daemons behind the in-process connector; every describe the controller sends is counted on the way out.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseMessageFrame } from "../../src/core/protocol/messages.js";
import { FACTS_REUSE_MS } from "../../src/mesh/controller/targets.js";
import type { Connector, FrameStream } from "../../src/mesh/transport/frames.js";
import { type SeedFixture, seedFixture } from "./support/in-process.js";

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

/** Passes every stream through and counts the describe requests sent to each address. */
class CountingConnector implements Connector {
  readonly describes = new Map<string, number>();
  constructor(private readonly inner: Connector) {}
  async connect(addr: string, signal?: AbortSignal, opts?: Parameters<Connector["connect"]>[2]): Promise<FrameStream> {
    const stream = await this.inner.connect(addr, signal, opts);
    const send = stream.send.bind(stream);
    stream.send = (frame: Uint8Array) => {
      const parsed = parseMessageFrame(frame);
      if (
        parsed.ok &&
        parsed.value.type === "request" &&
        (JSON.parse(parsed.value.signed.payload) as { method: string }).method === "describe"
      ) {
        this.describes.set(addr, (this.describes.get(addr) ?? 0) + 1);
      }
      return send(frame);
    };
    return stream;
  }
  total(): number {
    return [...this.describes.values()].reduce((a, b) => a + b, 0);
  }
}

/** Holds every describe frame while `holding`, until `release()`: a node that is slow to describe itself. */
class HoldingConnector implements Connector {
  holding = false;
  private readonly held: Array<() => void> = [];
  constructor(private readonly inner: Connector) {}
  async connect(addr: string, signal?: AbortSignal, opts?: Parameters<Connector["connect"]>[2]): Promise<FrameStream> {
    const stream = await this.inner.connect(addr, signal, opts);
    const send = stream.send.bind(stream);
    stream.send = (frame: Uint8Array) => {
      const parsed = parseMessageFrame(frame);
      const describe =
        parsed.ok &&
        parsed.value.type === "request" &&
        (JSON.parse(parsed.value.signed.payload) as { method: string }).method === "describe";
      if (describe && this.holding) {
        this.held.push(() => void send(frame));
        return Promise.resolve();
      }
      return send(frame);
    };
    return stream;
  }
  release(): void {
    this.holding = false;
    for (const go of this.held.splice(0)) go();
  }
}

describe("facts reuse before a placement", () => {
  it("a placement past the reuse window places with the facts it has and describes the nodes behind itself (issue 35)", async () => {
    let offset = 0;
    fx = await seedFixture({ controllerOptions: { clock: () => Date.now() + offset } });
    const holding = new HoldingConnector(fx.faults);
    await fx.reopen({ connector: holding, clock: () => Date.now() + offset });
    const [first] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>];
    for (const n of fx.nodes) expect((await fx.controller.addTarget(n.addr, "paired")).ok).toBe(true);
    offset += FACTS_REUSE_MS + 1;
    holding.holding = true;
    // On main this placement waited for every node's describe, which never comes while held.
    const r = await fx.controller.place({
      package: fx.pkgDir,
      name: "behind",
      config: { mode: "service" as const },
      start: true,
      prefer: [first.id],
    });
    expect(r.placed?.node_id, r.explain).toBe(first.id);
    holding.release();
    await fx.controller.describesBehind();
  });

  it("describes no target again within 10 s of its describe, every target after that, and a target whose contact failed at once", async () => {
    let offset = 0;
    fx = await seedFixture({ controllerOptions: { clock: () => Date.now() + offset } });
    const counting = new CountingConnector(fx.faults);
    await fx.reopen({ connector: counting, clock: () => Date.now() + offset });
    const [first, second] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>, NonNullable<SeedFixture["nodes"][0]>];
    for (const n of fx.nodes) expect((await fx.controller.addTarget(n.addr, "paired")).ok).toBe(true);
    const order = (name: string) => ({
      package: fx!.pkgDir,
      name,
      config: { mode: "service" as const },
      start: true,
      prefer: [first.id],
    });

    // addTarget described each node once; the placements right after reuse those facts.
    expect(counting.total()).toBe(2);
    const a = await fx.controller.place(order("reuse-a"));
    const b = await fx.controller.place(order("reuse-b"));
    expect([a.placed?.node_id, b.placed?.node_id]).toEqual([first.id, first.id]);
    expect(counting.total(), "no describe while the facts are fresh").toBe(2);

    // Past the reuse window every target is described again, once: behind the placement (issue 35), which used the
    // facts it had (still valid by their own expiry); the placement right after uses the fresh ones.
    offset += FACTS_REUSE_MS + 1;
    await fx.controller.place(order("reuse-c"));
    await fx.controller.describesBehind();
    expect(counting.total()).toBe(4);
    await fx.controller.place(order("reuse-c2"));
    await fx.controller.describesBehind();
    expect(counting.total(), "the facts described behind the last placement are reused").toBe(4);

    // A failed contact makes the target suspect: the next placement describes it (and only it).
    fx.faults.cut(second.addr);
    await fx.controller.refreshTargets(); // describes both: the cut node's fails, the first's answers
    fx.faults.heal(second.addr);
    const before = counting.describes.get(second.addr) ?? 0;
    const beforeFirst = counting.describes.get(first.addr) ?? 0;
    await fx.controller.place(order("reuse-d"));
    expect(counting.describes.get(second.addr)).toBe(before + 1);
    expect(
      counting.describes.get(first.addr),
      "the first node's facts were refreshed by refreshTargets and are reused",
    ).toBe(beforeFirst);
  });

  it("a placement right after an unload, a stop or a purge describes that node again (issue 33: it weighs the capacity just freed)", async () => {
    fx = await seedFixture();
    const counting = new CountingConnector(fx.faults);
    await fx.reopen({ connector: counting });
    const [first] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>];
    for (const n of fx.nodes) expect((await fx.controller.addTarget(n.addr, "paired")).ok).toBe(true);
    const order = (name: string) => ({
      package: fx!.pkgDir,
      name,
      config: { mode: "service" as const },
      start: true,
      prefer: [first.id],
    });
    const placed = async (name: string) => {
      const r = await fx!.controller.place(order(name));
      expect(r.placed?.node_id, r.explain).toBe(first.id);
      return r.placed!.instance_id;
    };
    const a = await placed("fresh-a");
    const b = await placed("fresh-b");
    const c = await placed("fresh-c");
    for (const [verb, id, opts] of [
      ["unload", a, {}],
      ["stop", b, {}],
      ["unload", c, { purge: true }],
    ] as const) {
      const before = counting.describes.get(first.addr) ?? 0;
      expect((await fx.controller.instance(verb, id, opts)).kind).toBe("ok");
      await placed(`fresh-after-${verb}${"purge" in opts ? "-purge" : ""}`);
      // Once, whatever the time: on main the facts of the describe before were reused for up to 10 s.
      expect(
        counting.describes.get(first.addr),
        `the node the ${verb} freed is described before the next placement`,
      ).toBe(before + 1);
    }
  });
});
