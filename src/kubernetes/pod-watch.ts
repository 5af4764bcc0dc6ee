/**
 * A watch on berth's pods in one namespace (issue 16, the keep loop of `berth serve`): LIST by the ownership
 * selector, then WATCH from the list's resourceVersion, and keep it open. A wake names a pod only — the loop always
 * follows it with its own quorum GET (I-4) — and every LIST is a reason to look at every listed pod again.
 *
 *   list ─► watch(from rv) ─► wake(pod) … ─┬─ closed / error ─► watch again from the last rv seen (after 1 s)
 *                                          └─ 410 Gone (resourceVersion too old) ─► relist ─► watch(from the new rv)
 *
 * A cluster that forbids or lacks the watch is resynced by LIST alone (the loop's periodic pass).
 */
import { describeApiError } from "../core/kubernetes/api-status.js";
import { MANAGED_SELECTOR } from "../core/kubernetes/naming.js";
import type { QuorumPod } from "../core/kubernetes/quorum.js";
import { type Cluster, canWatchPodSets, type WatchEnd, type WatchHandle } from "./cluster.js";

export const REWATCH_DELAY_MS = 1_000;

export interface PodWatchHandlers {
  /** A pod of the selector changed (or a LIST saw it): look at it again. */
  readonly onPod: (podName: string) => void;
  /** A LIST answered: every pod it names, and the names only the loop may act on after its own GET. */
  readonly onList: (pods: readonly QuorumPod[]) => void;
  readonly onError: (message: string) => void;
  /** The watch answered 410 Gone (its resourceVersion is too old) and a fresh LIST follows. */
  readonly onRelist?: () => void;
}

export class NamespacePodWatch {
  private handle: WatchHandle | undefined;
  private rv: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private openedAt = 0;
  private stopped = false;
  private watching = false;
  /** Counters for tests and logs. */
  readonly stats = { lists: 0, watches: 0, relists: 0, wakes: 0 };

  constructor(
    private readonly cluster: Cluster,
    readonly namespace: string,
    private readonly handlers: PodWatchHandlers,
    private readonly selector: string = MANAGED_SELECTOR,
  ) {}

  /** Lists, then watches from the list's resourceVersion. */
  async start(): Promise<void> {
    await this.list();
  }

  /** Whether a watch is open now (false: the loop's resync is the only trigger). */
  get open(): boolean {
    return this.watching;
  }

  async list(): Promise<void> {
    if (this.stopped) return;
    this.stats.lists++;
    const r = await this.cluster.listPods(this.namespace, this.selector);
    if (this.stopped) return;
    if (r.kind === "error") {
      this.handlers.onError(`could not list pods in ${this.namespace}: ${describeApiError(r.error)}`);
      this.later(() => void this.list());
      return;
    }
    this.rv = r.resourceVersion;
    this.handlers.onList(r.items);
    this.watch();
  }

  private later(fn: () => void): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped) fn();
    }, REWATCH_DELAY_MS);
    this.timer.unref();
  }

  private watch(): void {
    if (this.stopped || this.handle || !canWatchPodSets(this.cluster)) return;
    this.stats.watches++;
    this.openedAt = Date.now();
    const handle = this.cluster.watchPods(this.namespace, this.selector, this.rv, {
      onEstablished: () => {
        if (this.handle === handle) this.watching = true;
      },
      onWake: (signal) => {
        if (signal.resourceVersion !== undefined) this.rv = signal.resourceVersion;
        this.stats.wakes++;
        if (signal.podName !== "") this.handlers.onPod(signal.podName);
      },
      onBookmark: (rv) => {
        this.rv = rv;
      },
      onEnd: (why: WatchEnd) => {
        if (this.handle !== handle) return;
        this.handle = undefined;
        this.watching = false;
        if (this.stopped) return;
        switch (why) {
          case "gone":
            // 410: the resourceVersion is too old for the watch cache; what happened meanwhile is known only by a LIST.
            this.stats.relists++;
            this.rv = undefined;
            this.handlers.onRelist?.();
            void this.list();
            return;
          case "forbidden":
          case "unsupported":
            this.handlers.onError(`the pod watch in ${this.namespace} is ${why}; the loop resyncs by LIST only`);
            return;
          default:
            // A server-side timeout ("closed") resumes at once; a dropped connection after a pause.
            // A server that closes every watch at once must not make this a tight loop.
            if (why === "closed" && Date.now() - this.openedAt >= REWATCH_DELAY_MS) this.watch();
            else this.later(() => this.watch());
        }
      },
    });
    this.handle = handle;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const h = this.handle;
    this.handle = undefined;
    this.watching = false;
    h?.close();
  }
}
