import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseEventStream, type StreamMessage } from "./sse";

/** Feeds the chunks one after the other, as the stream reader does, and collects every complete message. */
function feed(chunks: readonly string[]): StreamMessage[] {
  const out: StreamMessage[] = [];
  let buffer = "";
  for (const chunk of chunks) {
    const parsed = parseEventStream(buffer + chunk);
    buffer = parsed.rest;
    out.push(...parsed.messages);
  }
  return out;
}

const STREAM =
  ': heartbeat\n\nevent: audit\nid: 7\ndata: {"seq":7}\n\n: heartbeat\n\nevent: audit\r\nid: 8\r\ndata: {"seq":8}\r\n\r\nevent: audit\nid: 9\ndata: {"seq"';

describe("the audit stream parser", () => {
  it("reads the event name, id and data of each message and skips heartbeat comments", () => {
    expect(feed([STREAM])).toEqual([
      { event: "audit", id: "7", data: '{"seq":7}' },
      { event: "audit", id: "8", data: '{"seq":8}' },
    ]);
  });

  it("keeps an incomplete message until the rest of it arrives", () => {
    const { messages, rest } = parseEventStream("event: audit\nid: 9\ndata: {}");
    expect(messages).toEqual([]);
    expect(parseEventStream(`${rest}\n\n`).messages).toEqual([{ event: "audit", id: "9", data: "{}" }]);
  });

  it("joins the lines of a multi-line data field and defaults the event name to message", () => {
    expect(feed(["data: a\ndata: b\n\n"])).toEqual([{ event: "message", id: null, data: "a\nb" }]);
  });

  it("gives the same messages however the network splits the stream into chunks", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(STREAM.length), { maxLength: 12 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const chunks = [0, ...points].map((start, i) => STREAM.slice(start, points[i] ?? STREAM.length));
        expect(feed(chunks)).toEqual(feed([STREAM]));
      }),
    );
  });
});
