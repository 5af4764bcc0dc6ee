/**
 * Waiting between observations (spec/kubernetes.md §8.4): a watch on the one pod wakes the loop early; without a healthy
 * watch the loop polls every 2 s. A wake is only a signal — the loop always follows it with a fresh quorum GET —
 * and wakes that arrive while the loop is busy coalesce into one further GET. A wake for a resourceVersion the loop has
 * already read (a create's own ADDED event, issue 19) is not news and costs no GET.
 */
import type { Cluster, WatchEnd, WatchHandle } from "./cluster.js";
import type { Clock } from "../kit/clock.js";

export interface WaitSettings {
  /** `k8s.watch`; false forces polling. */
  readonly watch: boolean;
  /** Resync interval with a healthy watch (10 s). */
  readonly resyncMs: number;
  /** Poll interval without one (2 s). */
  readonly pollMs: number;
  /**
   * How long a container this call saw start must stay running before the deploy answers success (3 s; issue 34,
   * core/kubernetes/confirm.ts): a real kubelet reports a crash at start as `running` first, `terminated` about a
   * relist (1 s) later.
   */
  readonly confirmStartMs: number;
}

export const DEFAULT_WAIT: WaitSettings = { watch: true, resyncMs: 10_000, pollMs: 2_000, confirmStartMs: 3_000 };

export class Waiter {
  private handle: WatchHandle | undefined;
  private established = false;
  private disabled: boolean;
  private pending = false;
  /** The resourceVersion of the latest wake that arrived while the loop was busy (events arrive in order). */
  private pendingRv: string | undefined;
  private wake: (() => void) | undefined;
  private lastRv: string | undefined;
  private closed = false;
  /** Watch (re)connections made, for benchmarks and tests. */
  watchesOpened = 0;

  constructor(
    private readonly cluster: Cluster,
    private readonly ns: string,
    private readonly name: string,
    private readonly clock: Clock,
    private readonly settings: WaitSettings,
    private readonly deadlineAt: number,
  ) {
    this.disabled = !settings.watch;
  }

  /** After each quorum GET: the resourceVersion a (re)started watch resumes from; undefined after a 404. */
  observed(resourceVersion: string | undefined): void {
    this.lastRv = resourceVersion;
  }

  /**
   * Opens the watch before the loop needs it (the create path, issue 19): from the current state after a 404, so the
   * watch is established while the Secret and Pod are created instead of after, and misses no event of the pod.
   */
  prime(): void {
    this.ensureWatch();
  }

  /** Waits for the first of: a wake, the resync/poll interval, the loop deadline. */
  async wait(): Promise<void> {
    return this.waitUntil(Number.POSITIVE_INFINITY);
  }

  /** As `wait`, but also no later than `at` (the end of a start confirmation window). */
  async waitUntil(at: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      // The latest coalesced wake is for the state the loop already read: every earlier one is older still.
      if (this.pendingRv === undefined || this.pendingRv !== this.lastRv) return;
    }
    this.ensureWatch();
    const interval = this.established && this.handle ? this.settings.resyncMs : this.settings.pollMs;
    const ms = Math.max(0, Math.min(interval, at - this.clock.now(), this.deadlineAt - this.clock.now()));
    const abort = new AbortController();
    const woken = new Promise<void>((resolve) => {
      this.wake = resolve;
    });
    await Promise.race([this.clock.sleep(ms, abort.signal), woken]);
    abort.abort();
    this.wake = undefined;
    this.pending = false;
  }

  /** A fixed wait of one poll interval (after a failed precondition), still cut short by the deadline. */
  async pause(): Promise<void> {
    await this.clock.sleep(Math.max(0, Math.min(this.settings.pollMs, this.deadlineAt - this.clock.now())));
  }

  private ensureWatch(): void {
    if (this.disabled || this.handle || this.closed) return;
    this.watchesOpened++;
    this.established = false;
    const handle = this.cluster.watchPod(this.ns, this.name, this.lastRv, {
      onEstablished: () => {
        if (this.handle === handle) this.established = true;
      },
      onWake: (signal) => {
        if (signal.resourceVersion !== undefined && signal.resourceVersion === this.lastRv) return;
        if (this.wake) this.wake();
        else {
          this.pending = true;
          this.pendingRv = signal.resourceVersion;
        }
      },
      onEnd: (why: WatchEnd) => {
        if (this.handle !== handle) return;
        const wasEstablished = this.established;
        this.handle = undefined;
        this.established = false;
        // 403 or an unsupported watch disables watching for this call; anything else reconnects at the next wait.
        if (why === "forbidden" || why === "unsupported") this.disabled = true;
        // 410 Gone: the next watch starts from the state of the next quorum GET.
        if (why === "gone") this.lastRv = undefined;
        // A wait sized for a healthy watch (10 s) is cut short so the loop re-reads and falls back to polling.
        if (wasEstablished && why !== "closed" && this.wake) this.wake();
      },
    });
    this.handle = handle;
  }

  close(): void {
    this.closed = true;
    const h = this.handle;
    this.handle = undefined;
    h?.close();
  }
}
