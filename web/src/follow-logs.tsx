/**
 * Logs that follow: the API answers a log tail (`GET /agents/{name}/logs`, `GET /instances/{id}/logs`, up to 64 KiB)
 * and has no log stream, so following means asking again every LOG_POLL_MS while the box is ticked, and showing the
 * newest answer with the time it arrived. One request at a time: the next one is asked only after the last answered.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { BerthApi } from "./api";
import { timeOf } from "./format";
import { useLive } from "./live";
import { ErrorNotice } from "./notice";
import { LogText } from "./verbs";

export const LOG_POLL_MS = 2000;

/** One per detail view, so its region is simply "logs" (a name with the subject in it would match the detail's own). */
export function FollowedLogs({
  buttonLabel,
  load,
}: {
  buttonLabel: string;
  load: (api: BerthApi) => Promise<unknown>;
}) {
  const { api } = useLive();
  const [follow, setFollow] = useState(false);
  const [logs, setLogs] = useState<{ body: unknown; at: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const latest = useRef(load);
  latest.current = load;

  const once = async () => {
    setBusy(true);
    try {
      setLogs({ body: await latest.current(api), at: Date.now() });
      setError(null);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    if (!follow) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      await once();
      if (!stopped) timer = setTimeout(tick, LOG_POLL_MS);
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
    // `once` reads the latest loader through a ref; following restarts only when the box or the API changes.
  }, [follow, api]);

  return (
    <section class="logs" aria-label="logs">
      <div class="table-tools">
        <button type="button" disabled={busy || follow} onClick={() => void once()}>
          {buttonLabel}
        </button>
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> Follow logs
        </label>
        {logs ? (
          <span role="status" class="hint">
            {follow ? "following, " : ""}read at {timeOf(logs.at)}
          </span>
        ) : null}
      </div>
      <ErrorNotice error={error} action="Reading the logs" />
      {logs ? <LogText logs={logs.body} /> : null}
    </section>
  );
}
