/**
 * One button's action against the API: its result or its error (shown with the server's message), a busy flag so
 * the button cannot fire twice, and a refetch of every view once it is done.
 */
import { useState } from "preact/hooks";
import { type Live, useLive } from "./live";

export interface Action<T> {
  readonly busy: boolean;
  readonly result: T | null;
  readonly error: unknown;
  readonly run: () => Promise<void>;
}

export function useAction<T>(perform: (live: Live) => Promise<T>): Action<T> {
  const live = useLive();
  const [state, setState] = useState<{ busy: boolean; result: T | null; error: unknown }>({
    busy: false,
    result: null,
    error: null,
  });
  const run = async () => {
    setState({ busy: true, result: null, error: null });
    try {
      const result = await perform(live);
      setState({ busy: false, result, error: null });
    } catch (error) {
      setState({ busy: false, result: null, error });
    }
    live.bump();
  };
  return { ...state, run };
}
