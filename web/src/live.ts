/**
 * How the views stay current without a reload: the app follows the audit stream, and every committed event bumps a
 * shared `revision` (coalesced, so a burst of events costs one refetch); each visible view refetches its list when the
 * revision changes, and also every POLL_MS for what changes without an audit event (node liveness, instance state).
 */
import { createContext } from "preact";
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks";
import type { BerthApi } from "./api";
import type { NodeDirectory } from "./node-directory";

export const POLL_MS = 15_000;
export const COALESCE_MS = 400;

export interface Live {
  readonly api: BerthApi;
  /** Changes whenever the server committed something the views may show. */
  readonly revision: number;
  /** Asks every view to refetch now (after the dashboard itself changed something). */
  readonly bump: () => void;
  /** Every node as the controller knows it, described once when the dashboard opened (node-directory.ts). */
  readonly nodes: NodeDirectory;
}

export const LiveContext = createContext<Live | null>(null);

export function useLive(): Live {
  const live = useContext(LiveContext);
  if (live === null) throw new Error("useLive outside of <LiveContext.Provider>");
  return live;
}

/** A revision counter bumped at most once per COALESCE_MS however many events arrive, and every POLL_MS. */
export function useRevision(): { revision: number; bump: () => void } {
  const [revision, setRevision] = useState(0);
  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  const bump = useCallback(() => {
    if (pending.current !== null) return;
    pending.current = setTimeout(() => {
      pending.current = null;
      setRevision((r) => r + 1);
    }, COALESCE_MS);
  }, []);
  useEffect(() => {
    const timer = setInterval(() => setRevision((r) => r + 1), POLL_MS);
    return () => clearInterval(timer);
  }, []);
  return { revision, bump };
}

export interface Resource<T> {
  readonly data: T | null;
  readonly error: Error | null;
  readonly loading: boolean;
}

/**
 * Loads `load()` now and again at every revision. A revision that arrives while a load is in flight is remembered
 * and served by one more load when it ends, so loads never overlap and the last answer shown is never stale.
 */
export function useResource<T>(load: (live: Live) => Promise<T>): Resource<T> {
  const live = useLive();
  const [state, setState] = useState<Resource<T>>({ data: null, error: null, loading: true });
  const inFlight = useRef(false);
  const again = useRef(false);
  const latest = useRef(load);
  latest.current = load;
  const liveRef = useRef(live);
  liveRef.current = live;

  const mounted = useRef(true);
  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );

  useEffect(() => {
    if (inFlight.current) {
      again.current = true;
      return;
    }
    inFlight.current = true;
    void (async () => {
      do {
        again.current = false;
        try {
          const data = await latest.current(liveRef.current);
          if (mounted.current) setState({ data, error: null, loading: false });
        } catch (error) {
          if (mounted.current) setState((s) => ({ data: s.data, error: error as Error, loading: false }));
        }
      } while (again.current && mounted.current);
      inFlight.current = false;
    })();
  }, [live.revision]);
  return state;
}
