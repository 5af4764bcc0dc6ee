/**
 * `Cluster` against a real apiserver. Kubeconfig loading, exec credential plugins and TLS material come from
 * `@kubernetes/client-node` 1.4.0 (`KubeConfig.applyToHTTPSOptions`); the requests themselves are plain HTTP on one
 * shared keep-alive agent, because berth needs what the typed 1.x client hides or gets wrong for this use (P-8):
 * the response `Date` header of a LIST, the raw `Status` body of every error (1.x hands it over as a string),
 * exact control over query strings (no `resourceVersion` on quorum reads; preconditions only on deletes), watch
 * `timeoutSeconds` with reconnects on the same socket pool, and a count of every request for the benchmarks.
 * (About 520 lines, one concept: the `Cluster` port against a real apiserver, one method per request berth makes.)
 */
import http from "node:http";
import https from "node:https";
import { createSecureContext, type SecureContext } from "node:tls";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  type ApiError,
  apiErrorOf,
  deleteVerdict,
  parseImfFixdate,
  parseStatus,
} from "../core/kubernetes/api-status.js";
import type { DeleteAuthority } from "../core/kubernetes/authority.js";
import {
  ClaimSchema,
  type ClaimObject,
  PodSchema,
  type SecretMeta,
  SecretMetaSchema,
} from "../core/kubernetes/objects.js";
import { fromQuorumRead, type QuorumPod } from "../core/kubernetes/quorum.js";
import type { Fence } from "../core/kubernetes/verify.js";
import type {
  Cluster,
  CreateResult,
  DeleteResult,
  ListResult,
  LogResult,
  ObjectPrecondition,
  PodSetWatch,
  ReadResult,
  RequestOptions,
  WatchHandle,
  WatchHandlers,
} from "./cluster.js";
import {
  H2Watches,
  type WatchEndReason,
  type WatchObject,
  type WatchSink,
  feedWatchBody,
  watchEndOf,
  watchLines,
} from "./watch-stream.js";

export const WATCH_TIMEOUT_SECONDS = 60;
/**
 * Issue 19 (spec/kubernetes.md §20 P-23): a namespace this connection read or created within this long is trusted to
 * exist without another GET. A namespace deleted meanwhile makes the Secret create answer NotFound (nothing is
 * written, H2) and is forgotten, so the next deploy reads and creates it again.
 */
export const NAMESPACE_TRUST_MS = 60_000;
const DEFAULT_TIMEOUT_MS = 30_000;

type Raw =
  | { kind: "response"; status: number; headers: http.IncomingHttpHeaders; body: string }
  | { kind: "transport"; message: string };

/** Builds request paths; exported so tests can check that quorum reads never carry a resourceVersion. */
export const paths = {
  namespace: (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}`,
  namespaces: () => "/api/v1/namespaces",
  pods: (ns: string | null) => (ns === null ? "/api/v1/pods" : `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`),
  pod: (ns: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}`,
  secrets: (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets`,
  secret: (ns: string, name: string) =>
    `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets/${encodeURIComponent(name)}`,
  claims: (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/persistentvolumeclaims`,
  claim: (ns: string, name: string) =>
    `/api/v1/namespaces/${encodeURIComponent(ns)}/persistentvolumeclaims/${encodeURIComponent(name)}`,
  list: (base: string, selector: string) => `${base}?labelSelector=${encodeURIComponent(selector)}`,
  watch: (ns: string, name: string, rv: string | undefined) =>
    `${paths.pods(ns)}?watch=true&fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}&allowWatchBookmarks=true&timeoutSeconds=${WATCH_TIMEOUT_SECONDS}${
      rv !== undefined ? `&resourceVersion=${encodeURIComponent(rv)}` : ""
    }`,
  /** Every pod of a label selector in one namespace (the keep loop of `berth serve`, issue 16). */
  watchSet: (ns: string, selector: string, rv: string | undefined) =>
    `${paths.pods(ns)}?watch=true&labelSelector=${encodeURIComponent(selector)}&allowWatchBookmarks=true&timeoutSeconds=${WATCH_TIMEOUT_SECONDS}${
      rv !== undefined ? `&resourceVersion=${encodeURIComponent(rv)}` : ""
    }`,
  log: (ns: string, name: string, follow: boolean, tail?: number) =>
    `${paths.pod(ns, name)}/log?container=agent${follow ? "&follow=true" : ""}${tail !== undefined ? `&tailLines=${tail}` : ""}`,
};

/** The DeleteOptions body of a fenced delete: preconditions only — never gracePeriodSeconds or propagationPolicy. */
export function fencedDeleteBody(pre: ObjectPrecondition): string {
  return JSON.stringify({
    kind: "DeleteOptions",
    apiVersion: "v1",
    preconditions: { uid: pre.uid, resourceVersion: pre.resourceVersion },
  });
}

function stripSecret(body: unknown): SecretMeta {
  // Secret data never leaves this function: only metadata is kept.
  const parsed = SecretMetaSchema.parse(body);
  return { metadata: parsed.metadata };
}

function secureContextOf(tls: https.AgentOptions): SecureContext | undefined {
  try {
    return createSecureContext(tls);
  } catch {
    return undefined;
  }
}

export class HttpCluster implements Cluster, PodSetWatch {
  private count = 0;
  private readonly agent: http.Agent;
  private readonly server: URL;
  /** Each open watch's cancel: destroys its HTTP/1.1 request or resets its HTTP/2 stream. */
  private readonly watches = new Set<() => void>();
  /** Watches over HTTP/2 (TLS servers only; watch-stream.ts). */
  private readonly h2: H2Watches | undefined;
  private readonly base: string;
  private readonly namespacesSeen = new Map<string, number>();

  constructor(
    private readonly kc: KubeConfig,
    tls: https.AgentOptions,
    readonly identity: { readonly context: string; readonly server: string },
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    this.server = new URL(cluster.server);
    this.base = this.server.pathname.replace(/\/$/, "");
    if (this.server.protocol === "https:") {
      // One parsed context for every connection (issue 19): the agent otherwise re-parses the CA, certificate and key
      // for each socket it opens. Material the parser refuses stays per socket, where it fails as a transport error.
      const context = secureContextOf(tls);
      this.agent = new https.Agent({ ...tls, ...(context ? { secureContext: context } : {}), keepAlive: true });
      this.h2 = new H2Watches(this.server.origin, { ...tls, ...(context ? { secureContext: context } : {}) });
    } else {
      this.agent = new http.Agent({ keepAlive: true });
      this.h2 = undefined;
    }
  }

  get requestCount(): number {
    return this.count;
  }

  /** Auth headers per request, so exec-plugin tokens refresh; TLS material stays on the shared agent. */
  private async headers(): Promise<Record<string, string>> {
    const opts: https.RequestOptions = {};
    await this.kc.applyToHTTPSOptions(opts);
    const out: Record<string, string> = { Accept: "application/json" };
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === "string") out[k] = v;
    if (opts.auth) out.Authorization = `Basic ${Buffer.from(opts.auth).toString("base64")}`;
    return out;
  }

  private open(method: string, path: string, headers: Record<string, string>): http.ClientRequest {
    const mod = this.server.protocol === "https:" ? https : http;
    return mod.request({
      protocol: this.server.protocol,
      hostname: this.server.hostname,
      port: this.server.port || undefined,
      method,
      path: `${this.base}${path}`,
      headers,
      agent: this.agent,
    });
  }

  private async send(method: string, path: string, body?: string, o?: RequestOptions): Promise<Raw> {
    this.count++;
    let headers: Record<string, string>;
    try {
      headers = await this.headers();
    } catch (error) {
      return {
        kind: "transport",
        message: `could not obtain credentials: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(body));
    }
    return new Promise<Raw>((resolve) => {
      const req = this.open(method, path, headers);
      const timeout = setTimeout(
        () => req.destroy(new Error(`timed out after ${o?.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`)),
        o?.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      );
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          clearTimeout(timeout);
          resolve({
            kind: "response",
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          });
        });
        res.on("error", (e) => {
          clearTimeout(timeout);
          resolve({ kind: "transport", message: e.message });
        });
      });
      req.on("error", (e) => {
        clearTimeout(timeout);
        // A reset connection is a transport error, never a verdict (P-5).
        resolve({ kind: "transport", message: e.message });
      });
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  private errorOf(raw: Raw): ApiError {
    return raw.kind === "transport" ? { kind: "transport", message: raw.message } : apiErrorOf(raw.status, raw.body);
  }

  private async read<T>(path: string, map: (body: unknown) => T, o?: RequestOptions): Promise<ReadResult<T>> {
    const raw = await this.send("GET", path, undefined, o);
    if (raw.kind === "response" && raw.status === 200) {
      try {
        return { kind: "found", object: map(JSON.parse(raw.body)) };
      } catch (error) {
        return {
          kind: "error",
          error: {
            kind: "transport",
            message: `could not decode the response: ${error instanceof Error ? error.message : String(error)}`,
          },
        };
      }
    }
    const err = this.errorOf(raw);
    if (err.kind === "status" && err.reason === "NotFound") return { kind: "absent" };
    return { kind: "error", error: err };
  }

  private async create<T>(
    path: string,
    manifest: Record<string, unknown>,
    map: (body: unknown) => T,
    o?: RequestOptions,
  ): Promise<CreateResult<T>> {
    const raw = await this.send("POST", path, JSON.stringify(manifest), o);
    if (raw.kind === "response" && raw.status >= 200 && raw.status < 300) {
      try {
        return { kind: "created", object: map(JSON.parse(raw.body)) };
      } catch (error) {
        return {
          kind: "error",
          error: {
            kind: "transport",
            message: `could not decode the response: ${error instanceof Error ? error.message : String(error)}`,
          },
        };
      }
    }
    const err = this.errorOf(raw);
    if (err.kind === "status" && err.reason === "AlreadyExists") return { kind: "already-exists" };
    return { kind: "error", error: err };
  }

  private async list<T>(path: string, map: (item: unknown) => T, o?: RequestOptions): Promise<ListResult<T>> {
    const raw = await this.send("GET", path, undefined, o);
    if (raw.kind !== "response" || raw.status !== 200) return { kind: "error", error: this.errorOf(raw) };
    try {
      const body = JSON.parse(raw.body) as { items?: unknown[]; metadata?: { resourceVersion?: unknown } };
      const dateHeader = raw.headers.date;
      const rv = body.metadata?.resourceVersion;
      return {
        kind: "listed",
        items: (body.items ?? []).map(map),
        serverDateMs: parseImfFixdate(typeof dateHeader === "string" ? dateHeader : null),
        ...(typeof rv === "string" ? { resourceVersion: rv } : {}),
      };
    } catch (error) {
      return {
        kind: "error",
        error: {
          kind: "transport",
          message: `could not decode the list: ${error instanceof Error ? error.message : String(error)}`,
        },
      };
    }
  }

  private async remove(path: string, pre: ObjectPrecondition, o?: RequestOptions): Promise<DeleteResult> {
    const raw = await this.send("DELETE", path, fencedDeleteBody(pre), o);
    const verdict = raw.kind === "transport" ? deleteVerdict(null, "") : deleteVerdict(raw.status, raw.body);
    if (verdict === "error") return { kind: "error", error: this.errorOf(raw) };
    return { kind: verdict };
  }

  /** Whether `getNamespace(ns)` would answer from what this connection saw (no request). */
  trustsNamespace(ns: string): boolean {
    const at = this.namespacesSeen.get(ns);
    return at !== undefined && Date.now() - at < NAMESPACE_TRUST_MS;
  }

  private noteNamespace(ns: string, exists: boolean): void {
    if (exists) this.namespacesSeen.set(ns, Date.now());
    else this.namespacesSeen.delete(ns);
  }

  /** A create answering NotFound in `ns`: the namespace may be gone, so it is read again next time. */
  private forgetOnNotFound<T extends { kind: string }>(ns: string, r: T): T {
    if (r.kind === "error" && "error" in r) {
      const e = (r as T & { error: ApiError }).error;
      if (e.kind === "status" && e.reason === "NotFound") this.noteNamespace(ns, false);
    }
    return r;
  }

  async getNamespace(ns: string, o?: RequestOptions): Promise<ReadResult<unknown>> {
    if (this.trustsNamespace(ns)) return { kind: "found", object: { metadata: { name: ns } } };
    const r = await this.read(paths.namespace(ns), (b) => b, o);
    if (r.kind !== "error") this.noteNamespace(ns, r.kind === "found");
    return r;
  }

  async createNamespace(manifest: Record<string, unknown>, o?: RequestOptions): Promise<CreateResult<unknown>> {
    const r = await this.create(paths.namespaces(), manifest, (b) => b, o);
    const name = (manifest.metadata as { name?: unknown } | undefined)?.name;
    if (typeof name === "string" && r.kind !== "error") this.noteNamespace(name, true);
    return r;
  }

  getPod(ns: string, name: string, o?: RequestOptions): Promise<ReadResult<QuorumPod>> {
    return this.read(paths.pod(ns, name), (b) => fromQuorumRead(PodSchema.parse(b)), o);
  }

  listPods(ns: string | null, selector: string, o?: RequestOptions): Promise<ListResult<QuorumPod>> {
    return this.list(paths.list(paths.pods(ns), selector), (b) => fromQuorumRead(PodSchema.parse(b)), o);
  }

  async createPod(ns: string, manifest: Record<string, unknown>, o?: RequestOptions): Promise<CreateResult<QuorumPod>> {
    return this.forgetOnNotFound(
      ns,
      await this.create(paths.pods(ns), manifest, (b) => fromQuorumRead(PodSchema.parse(b)), o),
    );
  }

  deletePod(
    ns: string,
    name: string,
    fence: Fence,
    _authority: DeleteAuthority,
    o?: RequestOptions,
  ): Promise<DeleteResult> {
    return this.remove(paths.pod(ns, name), fence, o);
  }

  getSecret(ns: string, name: string, o?: RequestOptions): Promise<ReadResult<SecretMeta>> {
    return this.read(paths.secret(ns, name), stripSecret, o);
  }

  listSecrets(ns: string, selector: string, o?: RequestOptions): Promise<ListResult<SecretMeta>> {
    return this.list(paths.list(paths.secrets(ns), selector), stripSecret, o);
  }

  async createSecret(
    ns: string,
    manifest: Record<string, unknown>,
    o?: RequestOptions,
  ): Promise<CreateResult<SecretMeta>> {
    return this.forgetOnNotFound(ns, await this.create(paths.secrets(ns), manifest, stripSecret, o));
  }

  deleteSecret(ns: string, name: string, pre: ObjectPrecondition, o?: RequestOptions): Promise<DeleteResult> {
    return this.remove(paths.secret(ns, name), pre, o);
  }

  getClaim(ns: string, name: string, o?: RequestOptions): Promise<ReadResult<ClaimObject>> {
    return this.read(paths.claim(ns, name), (b) => ClaimSchema.parse(b), o);
  }

  async createClaim(
    ns: string,
    manifest: Record<string, unknown>,
    o?: RequestOptions,
  ): Promise<CreateResult<ClaimObject>> {
    return this.forgetOnNotFound(ns, await this.create(paths.claims(ns), manifest, (b) => ClaimSchema.parse(b), o));
  }

  watchPod(ns: string, name: string, fromResourceVersion: string | undefined, handlers: WatchHandlers): WatchHandle {
    return this.watchPath(paths.watch(ns, name, fromResourceVersion), () => name, handlers);
  }

  watchPods(
    ns: string,
    selector: string,
    fromResourceVersion: string | undefined,
    handlers: WatchHandlers,
  ): WatchHandle {
    return this.watchPath(
      paths.watchSet(ns, selector, fromResourceVersion),
      (object) => object?.metadata?.name ?? "",
      handlers,
    );
  }

  /** One watch request, as an HTTP/2 stream when the server speaks it (watch-stream.ts says why), else HTTP/1.1. */
  private watchPath(
    path: string,
    nameOf: (object: WatchObject | undefined) => string,
    handlers: WatchHandlers,
  ): WatchHandle {
    let ended = false;
    let cancel: (() => void) | undefined;
    const end = (why: WatchEndReason) => {
      if (ended) return;
      ended = true;
      if (cancel) {
        this.watches.delete(cancel);
        cancel();
      }
      handlers.onEnd(why);
    };
    const sink: WatchSink = {
      status: (code) => {
        if (code !== 200) {
          end(watchEndOf(code));
          return false;
        }
        handlers.onEstablished();
        return true;
      },
      data: watchLines(nameOf, handlers, end),
      end: () => end("closed"),
      error: () => end("error"),
    };
    this.count++;
    void this.headers().then(
      (headers) => {
        if (ended) return;
        const begin = (c: () => void) => {
          cancel = c;
          this.watches.add(c);
        };
        const h2 = this.h2;
        if (!h2) return begin(this.watchHttp1(path, headers, sink));
        void h2.ready().then((session) => {
          if (ended) return;
          if (session === "failed") return end("error");
          begin(
            session === "http/1.1"
              ? this.watchHttp1(path, headers, sink)
              : h2.open(session, `${this.base}${path}`, headers, sink),
          );
        });
      },
      () => end("error"),
    );
    return { close: () => end("closed") };
  }

  private watchHttp1(path: string, headers: Record<string, string>, sink: WatchSink): () => void {
    const req = this.open("GET", path, headers);
    req.on("response", (res) => {
      res.on("error", () => sink.error());
      feedWatchBody(res.statusCode ?? 0, res, sink);
    });
    req.on("error", () => sink.error());
    req.end();
    return () => req.destroy();
  }

  async readLog(
    ns: string,
    name: string,
    opts: { follow: boolean; tailLines?: number; onChunk: (chunk: string) => void; signal?: AbortSignal },
  ): Promise<LogResult> {
    this.count++;
    const headers = await this.headers();
    headers.Accept = "*/*";
    return new Promise<LogResult>((resolve) => {
      const req = this.open("GET", paths.log(ns, name, opts.follow, opts.tailLines), headers);
      opts.signal?.addEventListener("abort", () => req.destroy(), { once: true });
      req.on("response", (res) => {
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const body = Buffer.concat(chunks).toString("utf8");
            const status = parseStatus(body, res.statusCode ?? 0);
            if (status?.reason === "NotFound") resolve({ kind: "absent" });
            else resolve({ kind: "error", error: apiErrorOf(res.statusCode ?? 0, body) });
          });
          return;
        }
        res.setEncoding("utf8");
        res.on("data", (c: string) => opts.onChunk(c));
        res.on("end", () => resolve({ kind: "done" }));
        res.on("error", (e) => resolve({ kind: "error", error: { kind: "transport", message: e.message } }));
      });
      req.on("error", (e) =>
        resolve(
          opts.signal?.aborted ? { kind: "done" } : { kind: "error", error: { kind: "transport", message: e.message } },
        ),
      );
      req.end();
    });
  }

  close(): void {
    for (const cancel of this.watches) cancel();
    this.watches.clear();
    this.h2?.close();
    this.agent.destroy();
  }
}
