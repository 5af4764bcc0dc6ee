/**
 * The node's connection-serving loop (spec/mesh.md §4.3): one request in flight per connection, a first-frame and an
 * idle deadline, and a protocol error or an unsolicited frame closes the connection without an answer. The loop only
 * frames; verifying and running a request is the dispatcher's (`service.ts`). Kept in its own file so a hook on the
 * loop (a first-frame deadline, "this connection is authenticated") lands here and nowhere else.
 */
import { encodeMessageFrame, parseMessageFrame, type SignedMessage } from "../../core/protocol/messages.js";
import type { FrameStream } from "../transport/frames.js";

export interface ConnectionLimits {
  readonly first_frame_ms: number;
  readonly idle_ms: number;
}

/** Verifies and runs one request; returns the signed answer and whether to close the connection. */
export type RequestHandler = (
  signed: SignedMessage,
  stream: FrameStream,
) => Promise<{ signed: SignedMessage; close: boolean }>;

export class Connections {
  private openStreams = new Set<FrameStream>();

  constructor(
    private readonly limits: () => ConnectionLimits,
    private readonly handle: RequestHandler,
  ) {}

  /** Serves one connection: one request in flight at a time (§4.3). Never throws. */
  async serve(stream: FrameStream): Promise<void> {
    this.openStreams.add(stream);
    let first = true;
    try {
      for (;;) {
        const limit = first ? this.limits().first_frame_ms : this.limits().idle_ms;
        const frame = await stream.recv(limit);
        first = false;
        const parsed = parseMessageFrame(frame);
        // A protocol error or an unsolicited frame closes the connection without an answer.
        if (!parsed.ok || parsed.value.type !== "request") break;
        const { signed, close } = await this.handle(parsed.value.signed, stream);
        await stream.send(encodeMessageFrame({ type: "response", signed }));
        if (close) break;
      }
    } catch {
      // end of stream, timeout or a framing error: the connection simply ends
    } finally {
      stream.close();
      this.openStreams.delete(stream);
    }
  }

  closeAll(): void {
    for (const s of this.openStreams) s.close();
  }
}
