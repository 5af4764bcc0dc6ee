/**
 * The events of one chain for an agent's timeline. The events API pages forward from a seq (at most 1,000 a page)
 * and filters nothing, so the timeline reads the newest HISTORY_LIMIT events page by page once when it opens, then
 * adds what the app's live tail receives after them. A server-side filter (`?agent=`) would spare the scan; until
 * then a timeline older than HISTORY_LIMIT events says where it starts.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import type { BerthApi } from "./api";
import type { AuditEvent } from "./types";

export const HISTORY_LIMIT = 20_000;
const PAGE = 1000;

export interface ChainHistory {
  readonly events: readonly AuditEvent[];
  /** The first seq read: earlier events were not scanned (0 when the whole chain was). */
  readonly from: number;
  readonly loading: boolean;
  readonly error: unknown;
}

export function useChainHistory(api: BerthApi, chain: string | null, live: readonly AuditEvent[]): ChainHistory {
  const [scanned, setScanned] = useState<{ events: readonly AuditEvent[]; from: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (chain === null) return;
    let cancelled = false;
    setScanned(null);
    void (async () => {
      try {
        const name = chain === "" ? "controller" : chain;
        const head = (await api.auditChains()).chains.find((c) => c.name === name)?.head.seq ?? -1;
        let after = Math.max(-1, head - HISTORY_LIMIT);
        const from = after + 1;
        const events: AuditEvent[] = [];
        while (!cancelled && after < head) {
          const page = await api.auditEvents(name, after, PAGE);
          if (page.events.length === 0) break;
          events.push(...page.events);
          after = page.events[page.events.length - 1]?.seq ?? head;
        }
        if (!cancelled) setScanned({ events, from });
      } catch (e) {
        if (!cancelled) setError(e);
      }
    })();
    return () => {
      cancelled = true;
    };
  }, [api, chain]);
  return useMemo(() => {
    if (scanned === null) return { events: [], from: 0, loading: error === null, error };
    const last = scanned.events[scanned.events.length - 1]?.seq ?? scanned.from - 1;
    return {
      events: [...scanned.events, ...live.filter((e) => e.seq > last)],
      from: scanned.from,
      loading: false,
      error,
    };
  }, [scanned, live, error]);
}
