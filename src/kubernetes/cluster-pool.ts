/**
 * One connection per cluster for a process's lifetime (issue 19): `connect()` hands out leases on one `HttpCluster`
 * per kubeconfig and context, so a long-lived process (`berth serve`, its keep loop, a benchmark) pays TLS, the
 * kubeconfig parse and the eager credential check once, not on every deploy, status or stop.
 *
 * A lease is a `Cluster` of its own: its `requestCount` counts only its own requests (so a deploy's outcome record
 * names its own `api_requests` even when calls share the connection), and its `close()` ends only the watches opened
 * through it. The shared connection stays open; its idle keep-alive sockets are unreferenced by Node's agent, so they
 * never keep a process alive. The key carries the kubeconfig files' modification times: a rewritten kubeconfig (a
 * rotated client certificate, another server) gets a new connection at the next `connect()`.
 */
import type { DeleteAuthority } from "../core/kubernetes/authority.js";
import type { Fence } from "../core/kubernetes/verify.js";
import type {
  Cluster,
  ObjectPrecondition,
  PodSetWatch,
  RequestOptions,
  WatchHandle,
  WatchHandlers,
} from "./cluster.js";
import type { HttpCluster } from "./http-cluster.js";

const pool = new Map<string, HttpCluster>();

export function pooled(key: string): HttpCluster | undefined {
  return pool.get(key);
}

/** A connection superseded under the same key (a rewritten kubeconfig) is not closed: leases may still use it. */
export function remember(key: string, cluster: HttpCluster): void {
  pool.set(key, cluster);
}

/** Closes every pooled connection (tests, benchmarks, a server's shutdown). Leases still held fail as transport errors. */
export function closePooledClusters(): void {
  for (const c of pool.values()) c.close();
  pool.clear();
}

export class ClusterLease implements Cluster, PodSetWatch {
  private count = 0;
  private readonly watches = new Set<WatchHandle>();

  constructor(private readonly inner: HttpCluster) {}

  get requestCount(): number {
    return this.count;
  }

  get identity() {
    return this.inner.identity;
  }

  private counted<T>(p: () => T): T {
    this.count++;
    return p();
  }

  getNamespace(ns: string, o?: RequestOptions) {
    // A namespace the connection trusts costs no request (http-cluster.ts NAMESPACE_TRUST_MS).
    if (this.inner.trustsNamespace(ns)) return this.inner.getNamespace(ns, o);
    return this.counted(() => this.inner.getNamespace(ns, o));
  }
  createNamespace(manifest: Record<string, unknown>, o?: RequestOptions) {
    return this.counted(() => this.inner.createNamespace(manifest, o));
  }
  getPod(ns: string, name: string, o?: RequestOptions) {
    return this.counted(() => this.inner.getPod(ns, name, o));
  }
  listPods(ns: string | null, selector: string, o?: RequestOptions) {
    return this.counted(() => this.inner.listPods(ns, selector, o));
  }
  createPod(ns: string, manifest: Record<string, unknown>, o?: RequestOptions) {
    return this.counted(() => this.inner.createPod(ns, manifest, o));
  }
  deletePod(ns: string, name: string, fence: Fence, authority: DeleteAuthority, o?: RequestOptions) {
    return this.counted(() => this.inner.deletePod(ns, name, fence, authority, o));
  }
  getSecret(ns: string, name: string, o?: RequestOptions) {
    return this.counted(() => this.inner.getSecret(ns, name, o));
  }
  listSecrets(ns: string, selector: string, o?: RequestOptions) {
    return this.counted(() => this.inner.listSecrets(ns, selector, o));
  }
  createSecret(ns: string, manifest: Record<string, unknown>, o?: RequestOptions) {
    return this.counted(() => this.inner.createSecret(ns, manifest, o));
  }
  deleteSecret(ns: string, name: string, pre: ObjectPrecondition, o?: RequestOptions) {
    return this.counted(() => this.inner.deleteSecret(ns, name, pre, o));
  }
  getClaim(ns: string, name: string, o?: RequestOptions) {
    return this.counted(() => this.inner.getClaim(ns, name, o));
  }
  createClaim(ns: string, manifest: Record<string, unknown>, o?: RequestOptions) {
    return this.counted(() => this.inner.createClaim(ns, manifest, o));
  }
  readLog(ns: string, name: string, opts: Parameters<Cluster["readLog"]>[2]) {
    return this.counted(() => this.inner.readLog(ns, name, opts));
  }

  private tracked(open: (handlers: WatchHandlers) => WatchHandle, handlers: WatchHandlers): WatchHandle {
    this.count++;
    let handle: WatchHandle | undefined;
    const own: WatchHandlers = {
      ...handlers,
      onEnd: (why) => {
        if (handle) this.watches.delete(handle);
        handlers.onEnd(why);
      },
    };
    handle = open(own);
    this.watches.add(handle);
    return handle;
  }

  watchPod(ns: string, name: string, from: string | undefined, handlers: WatchHandlers): WatchHandle {
    return this.tracked((h) => this.inner.watchPod(ns, name, from, h), handlers);
  }

  watchPods(ns: string, selector: string, from: string | undefined, handlers: WatchHandlers): WatchHandle {
    return this.tracked((h) => this.inner.watchPods(ns, selector, from, h), handlers);
  }

  /** Ends this lease's watches; the shared connection stays for the next lease. */
  close(): void {
    for (const w of [...this.watches]) w.close();
    this.watches.clear();
  }
}
