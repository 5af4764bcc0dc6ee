/**
 * The audit stream read with `fetch` and a stream reader rather than `EventSource`, so the token travels in the
 * `Authorization` header and never in a query string. `parseEventStream` is the pure part (text in, messages out);
 * `followEventStream` is the loop around it, resuming with `Last-Event-ID` after a dropped connection.
 */

export interface StreamMessage {
  readonly event: string;
  readonly id: string | null;
  readonly data: string;
}

/**
 * Splits complete messages off the front of `buffer` (the text/event-stream format: fields one per line, a blank
 * line ends a message, `:` lines are comments such as the heartbeat). Returns what remains incomplete.
 */
export function parseEventStream(buffer: string): { messages: StreamMessage[]; rest: string } {
  const messages: StreamMessage[] = [];
  // A CR at the very end may be the first half of a CRLF split across two chunks: leave it for the next read.
  const held = buffer.endsWith("\r") ? "\r" : "";
  const normalised = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/g, "\n");
  const blocks = normalised.split("\n\n");
  const rest = (blocks.pop() ?? "") + held;
  for (const block of blocks) {
    let event = "message";
    let id: string | null = null;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
    if (data.length > 0) messages.push({ event, id, data: data.join("\n") });
  }
  return { messages, rest };
}

export interface FollowOptions {
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Resume after this id (the last event already shown). */
  readonly lastEventId: () => string | null;
  readonly onMessage: (message: StreamMessage) => void;
  readonly onStatus: (status: "connecting" | "live" | "retrying", detail?: string) => void;
  readonly signal: AbortSignal;
}

const RETRY_MS = 2000;

/** Follows the stream until `signal` aborts, reconnecting after a failure with the last id it saw. */
export async function followEventStream(o: FollowOptions): Promise<void> {
  while (!o.signal.aborted) {
    o.onStatus("connecting");
    try {
      const last = o.lastEventId();
      const response = await fetch(o.url, {
        headers: { ...o.headers, accept: "text/event-stream", ...(last === null ? {} : { "last-event-id": last }) },
        signal: o.signal,
      });
      if (!response.ok || response.body === null) throw new Error(`the audit stream answered ${response.status}`);
      o.onStatus("live");
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parsed = parseEventStream(buffer + value);
        buffer = parsed.rest;
        for (const message of parsed.messages) o.onMessage(message);
      }
      o.onStatus("retrying", "the audit stream ended");
    } catch (error) {
      if (o.signal.aborted) return;
      o.onStatus("retrying", (error as Error).message);
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}
