import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { startProgress } from "./progress.js";

/** A pipe, as a CI log or `berth … 2>log` sees it. */
function pipe(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (d: Buffer) => {
    text += d.toString();
  });
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
}

describe("progress", () => {
  it("on a pipe prints one plain line per new condition, never the same one twice", () => {
    const p = pipe();
    const progress = startProgress({ stream: p.stream });
    for (const c of ["create", "wait: PodScheduled", "wait: PodScheduled", "wait: ContainersReady"]) progress.update(c);
    progress.stop();
    expect(p.text()).toBe("… create\n… wait: PodScheduled\n… wait: ContainersReady\n");
  });

  it("with --json prints nothing at all", () => {
    const p = pipe();
    const progress = startProgress({ json: true, stream: p.stream });
    progress.update("create");
    progress.stop();
    expect(p.text()).toBe("");
  });
});
