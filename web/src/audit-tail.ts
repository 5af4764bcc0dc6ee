/**
 * Follows one audit chain for the whole app: the recent events first (`GET /audit/events`), then every committed
 * event from the stream, resuming after the newest one it holds. Each event also bumps the app's revision, which is
 * how the lists learn that something changed (refetch on event, coalesced; see live.ts).
 */
import { createContext } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";
import { API_BASE, type BerthApi } from "./api";
import type { AuditTail } from "./views/audit";
import { followEventStream } from "./sse";
import type { AuditEvent, ChainInfo } from "./types";

/** How many events the tail keeps: the newest; the rest stay one export away. */
export const TAIL_LENGTH = 300;

/** The app's one tail, for the views that show recent events (overview, audit, an agent's timeline). */
export const TailContext = createContext<AuditTail | null>(null);

export function useTail(): AuditTail {
  const tail = useContext(TailContext);
  if (tail === null) throw new Error("useTail outside of <TailContext.Provider>");
  return tail;
}

export function useAuditTail(api: BerthApi, bump: () => void): AuditTail {
  const [chains, setChains] = useState<ChainInfo[]>([]);
  const [chain, setChain] = useState<string | null>(null);
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [status, setStatus] = useState("starting");
  const [error, setError] = useState<unknown>(null);
  const lastSeq = useRef<number | null>(null);

  useEffect(() => {
    api.auditChains().then(
      (r) => {
        setChains(r.chains);
        setChain(
          (current) =>
            current ?? (r.chains.some((c) => c.name === "controller") ? "controller" : (r.chains[0]?.name ?? "")),
        );
      },
      (e) => {
        setError(e);
        setChain("");
      },
    );
  }, [api]);

  useEffect(() => {
    if (chain === null) return;
    const abort = new AbortController();
    const query = chain === "" ? "" : `?chain=${encodeURIComponent(chain)}`;
    const add = (incoming: readonly AuditEvent[]) => {
      if (incoming.length === 0) return;
      setEvents((held) => {
        const known = lastSeq.current ?? -1;
        const fresh = incoming.filter((e) => e.seq > known);
        if (fresh.length === 0) return held;
        lastSeq.current = fresh[fresh.length - 1]?.seq ?? known;
        return [...held, ...fresh].slice(-TAIL_LENGTH);
      });
    };
    lastSeq.current = null;
    setEvents([]);
    void (async () => {
      try {
        // The events endpoint pages forward from a seq: start TAIL_LENGTH before the head to get the newest.
        const head = chains.find((c) => c.name === chain)?.head.seq ?? -1;
        const recent = await api.auditEvents(chain, Math.max(-1, head - TAIL_LENGTH), TAIL_LENGTH);
        add(recent.events);
      } catch (e) {
        setError(e);
      }
      await followEventStream({
        url: `${API_BASE}/audit/stream${query}`,
        headers: api.headers(),
        lastEventId: () => (lastSeq.current === null ? null : String(lastSeq.current)),
        signal: abort.signal,
        onStatus: (s, detail) => setStatus(detail ? `${s} (${detail})` : s),
        onMessage: (m) => {
          if (m.event !== "audit") return;
          try {
            add([JSON.parse(m.data) as AuditEvent]);
            bump();
          } catch (e) {
            setError(e);
          }
        },
      });
    })();
    return () => abort.abort();
    // `chains` is deliberately not a dependency: it is read once when a chain is chosen (a chain is chosen only
    // after the list arrived), and a refreshed list must not restart the stream.
  }, [api, chain, bump]);

  return { chains: chains.map((c) => c.name), chain, setChain, events, status, error };
}
