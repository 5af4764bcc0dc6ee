/**
 * What bounds a wait for the next frame (`FrameStream.recv`): an AbortSignal, or a number of milliseconds from the
 * call. The number is there for the hot paths (a node's per-connection idle deadline, a call's answer): a plain
 * timer, cleared when the frame comes, costs about 2 µs, where `AbortSignal.timeout` plus its abort listener costs
 * 35–50 µs on Node 20 and keeps a signal and a timer alive until the timeout would have fired (issue 19: a signed
 * status round trip paid that three times).
 */
export type RecvLimit = AbortSignal | number;

/** recv() rejects with this when a limit given in milliseconds passes first. */
export class FrameTimeout extends Error {
  override name = "FrameTimeout";
  constructor(readonly ms: number) {
    super(`no frame within ${ms} ms`);
  }
}

export interface FrameWaiter {
  resolve(frame: Uint8Array): void;
  reject(error: Error): void;
}

/**
 * Queues a waiter for the next frame, bounded by `limit`; the stream resolves or rejects the first waiter in
 * `waiters`. When the limit passes first, the waiter leaves the queue, so a later frame goes to the next recv.
 */
export function waitForFrame(waiters: FrameWaiter[], limit: RecvLimit | undefined): Promise<Uint8Array> {
  if (typeof limit === "number" && limit <= 0) return Promise.reject(new FrameTimeout(limit));
  if (typeof limit === "object" && limit.aborted) return Promise.reject(limit.reason);
  return new Promise((resolve, reject) => {
    let release = () => {};
    const waiter: FrameWaiter = {
      resolve: (frame) => {
        release();
        resolve(frame);
      },
      reject: (error) => {
        release();
        reject(error);
      },
    };
    const giveUp = (reason: unknown) => {
      const i = waiters.indexOf(waiter);
      if (i >= 0) waiters.splice(i, 1);
      reject(reason);
    };
    if (typeof limit === "number") {
      // unref'd like AbortSignal.timeout's timer: a wait never holds a process open on its own.
      const timer = setTimeout(() => giveUp(new FrameTimeout(limit)), limit).unref();
      release = () => clearTimeout(timer);
    } else if (limit !== undefined) {
      const onAbort = () => giveUp(limit.reason);
      limit.addEventListener("abort", onAbort, { once: true });
      release = () => limit.removeEventListener("abort", onAbort);
    }
    waiters.push(waiter);
  });
}
