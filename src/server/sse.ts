/**
 * `GET /api/v1/audit/stream`: server-sent events of one chain, `event: audit`, `id: <seq>`, data = the sealed event.
 *
 *   Chain.subscribe (this process's commits) ──┐
 *   poll of the db tip every pollMs (the CLI's) ┴─▶ flush: read seq > last sent from the database ─▶ write
 *
 * Both only wake the flush; events always come from the database in seq order, so a commit seen by both is sent once
 * and nothing another process wrote is missed. `Last-Event-ID` resumes after that seq; without it the stream starts
 * after the current head. A comment heartbeat keeps proxies from closing an idle stream. `closeAll` ends every stream
 * when the server closes, so no socket is left hanging.
 */
import type { ServerResponse } from "node:http";
import type { SealedEvent } from "../core/chain/event.js";
import { findEvents } from "../chain/chain.js";
import { err, ok, type Result } from "../kit/result.js";
import { type ChainName, headSeq, type OpenChain, openChainReader } from "./chains.js";
import type { ServerState } from "./state.js";

export interface StreamTimings {
  readonly pollMs: number;
  readonly heartbeatMs: number;
}

export const DEFAULT_STREAM_TIMINGS: StreamTimings = { pollMs: 500, heartbeatMs: 15_000 };
const BATCH = 500;

export function sseFrame(event: SealedEvent): string {
  return `id: ${event.seq}\nevent: audit\ndata: ${JSON.stringify(event)}\n\n`;
}

export class AuditStreams {
  private readonly ends = new Set<() => void>();

  constructor(
    private readonly state: ServerState,
    private readonly timings: StreamTimings = DEFAULT_STREAM_TIMINGS,
  ) {}

  get size(): number {
    return this.ends.size;
  }

  /** Takes over `res` (already hijacked from fastify) until the client goes or the server closes. */
  open(res: ServerResponse, chain: ChainName, lastEventId: number | null): void {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.write(": berth audit stream\nretry: 2000\n\n");
    let reader: OpenChain | null = null;
    let last = lastEventId;
    let ended = false;
    const flush = () => {
      if (ended) return;
      reader ??= openChainReader(this.state, chain);
      if (reader === null) return;
      if (last === null) last = headSeq(reader.db, reader.chainId);
      for (;;) {
        let n = 0;
        for (const e of findEvents(reader.db, reader.chainId, { fromSeq: last + 1, toSeq: last + BATCH })) {
          res.write(sseFrame(e));
          last = e.seq;
          n++;
        }
        if (n < BATCH) break;
      }
    };
    // A read that fails (the database went away) ends this stream; it never takes the server down.
    const flushNow = () => {
      try {
        flush();
      } catch {
        end();
      }
    };
    // On a PostgreSQL store the mirror is brought up to date first (other servers and CLIs append there too).
    const safeFlush = () => {
      if (chain !== "controller" || this.state.controllerMirror === null) return flushNow();
      this.state.refreshChains().then(flushNow, () => end());
    };
    const poll = setInterval(safeFlush, this.timings.pollMs);
    const beat = setInterval(() => res.write(": heartbeat\n\n"), this.timings.heartbeatMs);
    const unsubscribe =
      chain === "controller"
        ? this.state.controller.store.chain.subscribe(() => setImmediate(safeFlush))
        : () => undefined;
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(poll);
      clearInterval(beat);
      unsubscribe();
      reader?.close();
      this.ends.delete(end);
      if (!res.writableEnded) res.end();
    };
    this.ends.add(end);
    res.on("close", end);
    res.on("error", end);
    safeFlush();
  }

  closeAll(): void {
    for (const end of [...this.ends]) end();
  }
}

/** `Last-Event-ID` as a seq: absent → null; anything but a non-negative integer is a bad request. */
export function parseLastEventId(header: string | string[] | undefined): Result<number | null> {
  if (header === undefined) return ok(null);
  const text = Array.isArray(header) ? header[0] : header;
  if (text === undefined || !/^\d{1,15}$/.test(text.trim())) return err("must be a non-negative integer");
  return ok(Number(text.trim()));
}
