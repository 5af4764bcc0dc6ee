/**
 * The nodes, for every view at once, and the first paint's fix (issue 13, "first paint shows real states"). After a
 * controller restart it knows its nodes' addresses but has not described them yet, so `GET /instances` answers state
 * "unknown" and names are missing until something asks for `GET /nodes?refresh=true`, which only the Nodes tab did.
 * The app now asks once when it opens, and the views whose answer depends on it (instances, agents, the overview)
 * wait for that describe before their first load (`described`), so the first thing they paint is the real state.
 * Later loads, at every revision, read what the controller holds (no describe per revision).
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { BerthApi } from "./api";
import type { NodeInfo } from "./types";

/** A node that never answers must not hold the first paint forever: after this the views load what there is. */
export const DESCRIBE_WAIT_MS = 10_000;

export interface NodeDirectory {
  readonly list: readonly NodeInfo[] | null;
  readonly error: unknown;
  /** Node id → display name, for the lists that name nodes by id. */
  readonly names: ReadonlyMap<string, string>;
  /** Settles when the first describe answered (or failed, or DESCRIBE_WAIT_MS passed). */
  readonly described: Promise<void>;
}

export function useNodeDirectory(api: BerthApi, revision: number): NodeDirectory {
  const [list, setList] = useState<readonly NodeInfo[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const firstDone = useRef(false);
  const described = useMemo(() => {
    let settle = () => {};
    const promise = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const timer = setTimeout(settle, DESCRIBE_WAIT_MS);
    api
      .nodes(true)
      .then(
        (r) => setList(r.nodes),
        (e) => setError(e),
      )
      .finally(() => {
        clearTimeout(timer);
        firstDone.current = true;
        settle();
      });
    return promise;
  }, [api]);
  useEffect(() => {
    if (!firstDone.current) return;
    api.nodes().then(
      (r) => {
        setList(r.nodes);
        setError(null);
      },
      (e) => setError(e),
    );
  }, [api, revision]);
  const names = useMemo(
    () => new Map((list ?? []).flatMap((n) => (n.node_id && n.name ? [[n.node_id, n.name] as const] : []))),
    [list],
  );
  return useMemo(() => ({ list, error, names, described }), [list, error, names, described]);
}
