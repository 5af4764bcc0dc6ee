/**
 * The controller's side of one control exchange (spec/mesh.md §4.3, §4.7, §9.3): sign a request, send it over a fresh
 * connection from the `Connector`, serve the node's fetches from the package of the in-flight request, and accept
 * only an answer bound to the request (nonce, method, responder key, boot id). The caller classifies the result:
 * a mutating call with no valid answer after the request may have left is *indeterminate* — never resend it.
 *
 * (About 510 lines, one concept: one exchange, request to bound answer; the fetch serving and the answer checks
 * are steps of it.)
 */
import { randomBytes } from "node:crypto";
import type { JsonObject } from "../../core/crypto/canonical.js";
import { parseCanonical } from "../../core/crypto/canonical.js";
import { nodeIdOf, type SigningKey, verifyTagged } from "../../core/crypto/ed25519.js";
import { probeTimes } from "../../core/mesh/silent-node.js";
import { verifyAnswer } from "../../core/protocol/answer.js";
import {
  type Authority,
  type CheckpointClaim,
  encodeMessageFrame,
  type FetchFrame,
  LIMITS,
  type Method,
  MUTATING_METHODS,
  parseMessageFrame,
  type RefusalCode,
  type RequestPayload,
  type ResponsePayload,
  type SignedMessage,
  SignedMessageSchema,
} from "../../core/protocol/messages.js";
import { parseResult, type ResultOf } from "../../core/protocol/results.js";
import { signRequest } from "../../core/protocol/sign.js";
import { type Connector, type FrameStream, PeerKeyMismatch } from "../transport/frames.js";
import type { PackageSource } from "./package-source.js";

export interface TargetRef {
  readonly addr: string;
  /** The learned node id, or `"*"` for the first describe of an address. */
  readonly nodeId: string;
  /** The stored key; `null` only for a trust-on-first-use describe. */
  readonly key: string | null;
  /** The boot id last learned from describe; `null` for describe. */
  readonly bootId: string | null;
  /**
   * Issue 38: the tree size of the controller checkpoint this node said (in its last describe, or by accepting one
   * since) it holds; `null` when it holds none, absent when the node does not witness (it would refuse the member).
   */
  readonly witnessed?: number | null;
}

/**
 * Returned by `onSend` to hear whether the request may have reached the node: `true` as soon as it is handed to the
 * connection (the node may be working on it meanwhile), else `false`/`true` when the call ends. Called once.
 */
export type SendSettled = (mayHaveArrived: boolean) => void | Promise<void>;
/**
 * Issue 37 (F5): the request must not leave (its node is held: core/mesh/silent-node.ts); `held` says why. The call
 * ends `unreachable` with `held: true`, nothing sent.
 */
export interface SendHeld {
  readonly held: string;
}
/** What an `onSend` hook gives back: nothing, how to hear how the call ended, or that the request must not leave. */
export type SendHookResult = SendSettled | SendHeld | undefined;

function isHeld(r: SendHookResult): r is SendHeld {
  return typeof r === "object" && r !== null && typeof r.held === "string";
}

/** Nothing left this process: the connection could not be opened, or the handshake proved another key. */
export function provablyUnsent(r: CallResult): boolean {
  return r.kind === "unreachable" || (r.kind === "no_answer" && !r.sent);
}

/**
 * What an `ok` answer holds: for a method of the protocol, its result as core/protocol/results.ts types it (the client
 * checked it against the method's schema on arrival, so callers read members, never re-parse); for any other method
 * name (tests send those to see them refused), a JSON object.
 */
export type AnswerOf<M extends string> = M extends Method ? ResultOf<M> & JsonObject : JsonObject;

export type CallResult<M extends string = string> =
  | {
      readonly kind: "ok";
      readonly result: AnswerOf<M>;
      readonly response: ResponsePayload;
      readonly key: string;
      /** Issue 38: the tree size of the checkpoint the request carried, which the node now holds. */
      readonly checkpointSize?: number;
    }
  | {
      readonly kind: "refused";
      readonly code: RefusalCode;
      readonly reason: string;
      readonly response: ResponsePayload;
    }
  /**
   * The connection could not be opened (nothing was sent). `held`: the request was not even tried, its node being
   * held (issue 37, F5): no new contact, nothing to record of the node.
   */
  | { readonly kind: "unreachable"; readonly reason: string; readonly held?: true }
  /**
   * No valid answer. `sent` says whether the request may have reached the node; `offered_key` is set when the answer
   * was signed by another key than the stored one (so the caller never reads it out of the reason sentence).
   */
  | { readonly kind: "no_answer"; readonly reason: string; readonly sent: boolean; readonly offered_key?: string };

/** §9.3: the attempt outcome for a call result. */
export function outcomeOf(
  method: string,
  r: CallResult,
): "placed" | "ok" | "refused" | "unreachable" | "indeterminate" {
  switch (r.kind) {
    case "ok":
      return method === "place" || method === "load" ? "placed" : "ok";
    case "refused":
      return "refused";
    case "unreachable":
      return "unreachable";
    case "no_answer":
      return MUTATING_METHODS.has(method) && r.sent ? "indeterminate" : "unreachable";
  }
}

/** How long an idle warm connection may carry a read (the connector closes it after WARM_IDLE_MS anyway). */
const WARM_READ_MS = 10_000;

export interface CallOptions {
  readonly decisionId?: string | null;
  /** Serves the node's fetches during place/load. */
  readonly package?: PackageSource;
  readonly timeoutMs?: number;
  /** Override for tests: the nonce to use. */
  readonly nonce?: string;
}

export interface NodeClientOptions {
  readonly key: SigningKey;
  readonly connector: Connector;
  readonly clock?: () => number;
  /** Default call timeout (§4.9: 20 s; place/load 280 s). */
  readonly timeoutMs?: number;
  /**
   * Issue 16: told each request's target and `issued_at_ms` after signing and before it can leave, and awaited, so the
   * controller's "last sent" stamp (the node lease's rule 4, docs/concepts.md) is persisted first.
   */
  readonly onSend?: (nodeId: string, issuedAtMs: number) => SendHookResult | Promise<SendHookResult>;
  /**
   * Issue 20: the controller store and leader epoch every request carries, asked before each call (a leader's epoch
   * is its own; it throws once the process may no longer act, and then nothing is sent). Without it requests carry
   * none, which a node accepts only for the read methods.
   */
  readonly authority?: (method: string) => Authority | Promise<Authority>;
  /**
   * Issue 38: the controller's newest checkpoint and the proof from the size the node holds, asked before each call
   * but describe to a node that witnesses (`TargetRef.witnessed` present); null while the controller has none.
   */
  readonly checkpoint?: (held: number | null) => Promise<CheckpointClaim | null>;
}

export class NodeClient {
  readonly controllerId: string;
  private readonly clock: () => number;

  constructor(private readonly o: NodeClientOptions) {
    this.controllerId = nodeIdOf(o.key.publicKey);
    this.clock = o.clock ?? Date.now;
  }

  /** One signed call. Never throws for network or protocol trouble: that is a CallResult, its answer typed per method. */
  async call<M extends string>(
    target: TargetRef,
    method: M,
    body: JsonObject,
    opts: CallOptions = {},
  ): Promise<CallResult<M>> {
    return (await this.callUntyped(target, method, body, opts)) as CallResult<M>;
  }

  private async callUntyped(
    target: TargetRef,
    method: string,
    body: JsonObject,
    opts: CallOptions,
  ): Promise<CallResult> {
    const timeoutMs =
      opts.timeoutMs ?? this.o.timeoutMs ?? (method === "place" || method === "load" ? 280_000 : 20_000);
    let authority: Authority | null = null;
    try {
      authority = this.o.authority ? await this.o.authority(method) : null;
    } catch (error) {
      return { kind: "unreachable", reason: `not sent: ${(error as Error).message}` };
    }
    let checkpoint: CheckpointClaim | null = null;
    if (method !== "describe" && target.witnessed !== undefined && this.o.checkpoint) {
      try {
        checkpoint = await this.o.checkpoint(target.witnessed);
      } catch (error) {
        return {
          kind: "unreachable",
          reason: `not sent: the controller's checkpoint cannot be read: ${(error as Error).message}`,
        };
      }
    }
    const sign = (nonce: string) =>
      signRequest(this.o.key, {
        method,
        target: target.nodeId,
        targetBoot: method === "describe" ? null : target.bootId,
        nonce,
        issuedAtMs: this.clock(),
        validityMs: Math.min(timeoutMs + 10_000, LIMITS.validityMs),
        decisionId: opts.decisionId ?? null,
        authority,
        body,
        checkpoint,
      });
    // Warm connections (client/connector.ts): a read may take one idle up to WARM_IDLE_MS; a mutating call only one
    // used in the last two seconds (the describe before a place), since a connection the node closed meanwhile makes
    // a mutating call indeterminate where a fresh one would have failed cleanly.
    const mutating = MUTATING_METHODS.has(method);
    const first = sign(opts.nonce ?? randomBytes(16).toString("hex"));
    // Issue 16: the stamp is persisted before the request can leave (the node lease's rule 4).
    const settleFirst = await this.o.onSend?.(target.nodeId, first.request.issued_at_ms);
    if (isHeld(settleFirst)) return { kind: "unreachable", reason: `not sent: ${settleFirst.held}`, held: true };
    // Once the request is handed to the connection it may reach the node, whatever the answer: its stamp is settled
    // then, while the node works, rather than after the answer (issue 19). Awaited before the call returns.
    let settledEarly: Promise<{ readonly error: unknown } | null> | null = null;
    const left = () => {
      if (typeof settleFirst !== "function" || settledEarly !== null) return;
      settledEarly = Promise.resolve()
        .then(() => settleFirst(true))
        .then(
          () => null,
          (error: unknown) => ({ error }),
        );
    };
    const startedMs = Date.now();
    const tried = await this.exchangeVia(
      target,
      first.signed,
      first.request,
      { ...opts, timeoutMs },
      mutating ? 2_000 : WARM_READ_MS,
      left,
    );
    if (settledEarly !== null) {
      const failed = await (settledEarly as Promise<{ readonly error: unknown } | null>);
      if (failed !== null) throw failed.error;
    } else if (typeof settleFirst === "function") await settleFirst(!provablyUnsent(tried.result));
    // Issue 37 (F5): one timeout bounds the whole call. A node that takes the connection and never answers used up
    // the first exchange's whole timeout, and a second one on a fresh connection doubled how long it took to be
    // judged unreachable (40 s for a status); it is not asked again.
    const leftMs = timeoutMs - (Date.now() - startedMs);
    if (!tried.staleReuse || mutating || leftMs <= 0) return tried.result;
    // A read on a warm connection the node had closed: nothing was answered, so ask again on a fresh one (a new nonce:
    // the node may have read the first before it closed), within what is left of the call's timeout.
    const again = sign(randomBytes(16).toString("hex"));
    const settleAgain = await this.o.onSend?.(target.nodeId, again.request.issued_at_ms);
    if (isHeld(settleAgain)) return { kind: "unreachable", reason: `not sent: ${settleAgain.held}`, held: true };
    const result = (await this.exchangeVia(target, again.signed, again.request, { ...opts, timeoutMs: leftMs }, 0))
      .result;
    if (typeof settleAgain === "function") await settleAgain(!provablyUnsent(result));
    return result;
  }

  /**
   * Issue 37 (F5): a probe of a held node — a describe already expired when it leaves (core/mesh/silent-node.ts
   * `probeTimes`), on a fresh connection. The node refuses it `expired` at verification, before its lease is renewed,
   * so it is not stamped (rule 4 counts only what may renew) and is never held; a signed refusal bound to its nonce
   * (`refused`) proves the node answers again. A node with the stored key only: a probe learns nothing.
   */
  async probe(target: TargetRef, timeoutMs?: number): Promise<CallResult<"describe">> {
    const times = probeTimes(this.clock());
    const { signed, request } = signRequest(this.o.key, {
      method: "describe",
      target: target.nodeId,
      targetBoot: null,
      nonce: randomBytes(16).toString("hex"),
      issuedAtMs: times.issued_at_ms,
      validityMs: times.validity_ms,
      decisionId: null,
      authority: null,
      body: {},
    });
    const wait = timeoutMs ?? this.o.timeoutMs ?? 20_000;
    return (await this.exchange(target, signed, request, { timeoutMs: wait })) as CallResult<"describe">;
  }

  /** Sends an already signed request on a fresh connection (tests use this for replays and forged messages). */
  async exchange(
    target: TargetRef,
    signed: SignedMessage,
    request: RequestPayload,
    opts: CallOptions = {},
  ): Promise<CallResult> {
    return (await this.exchangeVia(target, signed, request, opts, 0)).result;
  }

  /** `staleReuse`: a warm connection failed before the node sent a single frame (it was probably closed already). */
  private async exchangeVia(
    target: TargetRef,
    signed: SignedMessage,
    request: RequestPayload,
    opts: CallOptions,
    reuseIdleMs: number,
    left: () => void = () => undefined,
  ): Promise<{ result: CallResult; staleReuse: boolean }> {
    let heard = false;
    let reused = false;
    const result = await this.exchangeOn(
      target,
      signed,
      request,
      opts,
      reuseIdleMs,
      (r) => {
        reused = r;
      },
      () => {
        heard = true;
      },
      left,
    );
    return { result, staleReuse: reused && !heard && result.kind === "no_answer" };
  }

  private async exchangeOn(
    target: TargetRef,
    signed: SignedMessage,
    request: RequestPayload,
    opts: CallOptions,
    reuseIdleMs: number,
    onStream: (reused: boolean) => void,
    onFrame: () => void,
    /** The request was handed to the connection: from here it may reach the node, whatever the result says. */
    left: () => void,
  ): Promise<CallResult> {
    const timeoutMs = opts.timeoutMs ?? this.o.timeoutMs ?? 20_000;
    const deadline = Date.now() + timeoutMs;
    // One deadline for the whole exchange: a signal for the connect, what is left of it for each wait for a frame.
    // A plain timer, cleared once connected, not AbortSignal.timeout: that costs ~35 µs a call and lives until it
    // would have fired (issue 19, src/mesh/transport/recv-limit.ts).
    const connecting = new AbortController();
    const timer = setTimeout(
      () => connecting.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")),
      timeoutMs,
    ).unref();
    let stream: FrameStream;
    try {
      stream = await this.o.connector.connect(target.addr, connecting.signal, { reuseIdleMs });
      onStream(stream.reused === true);
    } catch (error) {
      // §4.11: a connector that knew the expected key refused another: the same result as a check below.
      if (error instanceof PeerKeyMismatch && error.presented !== null)
        return keyRefused(target.addr, error.expected, error.presented);
      return { kind: "unreachable", reason: `cannot connect to ${target.addr}: ${(error as Error).message}` };
    } finally {
      clearTimeout(timer);
    }
    // §4.11: over TLS the node has proved its key in the handshake. Another key than the stored one is refused before
    // anything is sent, with the result an answer signed by another key gets (the caller chains peer.key_refused
    // once per offered key); on first use the answer must be signed by the key the handshake proved.
    const proved = stream.peerKey;
    if (proved !== undefined && target.key !== null && proved !== target.key) {
      stream.close();
      return keyRefused(target.addr, target.key, proved);
    }
    const expectedKey = target.key ?? proved ?? null;
    let sent = false;
    try {
      const sending = stream.send(encodeMessageFrame({ type: "request", signed }));
      sent = true; // from here the request may have left, even if the write reports an error
      left();
      await sending;
      for (;;) {
        const frame = await stream.recv(deadline - Date.now());
        onFrame();
        const parsed = parseMessageFrame(frame);
        if (!parsed.ok) return this.noAnswer(stream, `protocol error: ${parsed.error}`, sent);
        const msg = parsed.value;
        if (msg.type === "fetch") {
          if (!(request.method === "place" || request.method === "load"))
            return this.noAnswer(stream, "node sent a fetch for a read method", sent);
          await this.serveFetch(stream, msg, request, opts.package);
          continue;
        }
        if (msg.type !== "response") return this.noAnswer(stream, `unexpected ${msg.type} frame`, sent);
        const check = verifyAnswer(msg.signed, request, expectedKey);
        if (!check.ok)
          return this.noAnswer(stream, `no valid answer: ${check.error.reason}`, sent, check.error.offered_key);
        const outcome = check.value.response.outcome;
        if (outcome.status === "ok") {
          // Parsed once, here, against the method's schema (core/protocol/results.ts): callers may rely on the shape.
          const shape = parseResult(request.method, outcome.result as JsonObject);
          if (!shape.ok) return this.noAnswer(stream, `no valid answer: ${shape.error}`, sent);
          // A complete exchange: the connection may carry the next call (§4.3), if the connector keeps it warm.
          if (stream.release) stream.release();
          else stream.close();
          const size = request.checkpoint ? checkpointSizeOf(request.checkpoint.note) : null;
          return {
            kind: "ok",
            result: outcome.result as JsonObject,
            response: check.value.response,
            key: check.value.key,
            ...(size === null ? {} : { checkpointSize: size }),
          };
        }
        // §9.3: on every non-ok outcome of a mutating call the connection is destroyed first.
        stream.close();
        return { kind: "refused", code: outcome.code, reason: outcome.reason, response: check.value.response };
      }
    } catch (error) {
      return this.noAnswer(stream, (error as Error).message ?? String(error), sent);
    }
  }

  private noAnswer(stream: FrameStream, reason: string, sent: boolean, offeredKey?: string): CallResult {
    stream.close();
    return offeredKey === undefined
      ? { kind: "no_answer", reason, sent }
      : { kind: "no_answer", reason, sent, offered_key: offeredKey };
  }

  /** Serves one fetch, only for the in-flight package's manifest and pinned files (§4.3). */
  private async serveFetch(
    stream: FrameStream,
    f: FetchFrame,
    request: RequestPayload,
    pkg: PackageSource | undefined,
  ): Promise<void> {
    const refuse = (reason: string) => stream.send(encodeMessageFrame({ type: "fetch_error", reason }));
    const requested = typeof request.body.package_id === "string" ? request.body.package_id : null;
    if (!pkg || f.package_id !== requested || pkg.packageId !== requested)
      return refuse(`package ${f.package_id} is not the one this request names`);
    let bytes: Buffer;
    if (f.what === "manifest") {
      const all = Buffer.from(pkg.manifest);
      bytes = all.subarray(Math.min(f.offset, all.length), Math.min(f.offset + f.length, all.length));
    } else {
      if (f.sha256 === null) return refuse("a file fetch must name its sha256");
      const range = pkg.readRange(f.sha256, f.offset, f.length);
      if (typeof range === "string") return refuse(range);
      bytes = range;
    }
    const header = stream.send(encodeMessageFrame({ ...f, type: "data", data_length: bytes.length }));
    // Sent in the same tick as its header, so both leave in one write (transport/frames.ts).
    await Promise.all(bytes.length > 0 ? [header, stream.send(bytes)] : [header]);
  }

  /** describe, plus the §6.2 facts checks that belong to the exchange (same key, same node and boot). */
  async describe(addr: string, key: string | null, nodeId = "*"): Promise<DescribeResult> {
    const r = await this.call({ addr, nodeId, key, bootId: null }, "describe", {});
    if (r.kind !== "ok") return r;
    const facts = r.result.facts;
    const parsedFacts = SignedMessageSchema.safeParse(facts);
    if (
      !parsedFacts.success ||
      parsedFacts.data.key !== r.key ||
      !verifyTagged(r.key, "berth.facts.v1", parsedFacts.data.payload, parsedFacts.data.sig)
    ) {
      return { kind: "no_answer", reason: "facts are not signed by the answering key", sent: true };
    }
    const content = parseCanonical(parsedFacts.data.payload);
    if (!content.ok || typeof content.value !== "object" || content.value === null || Array.isArray(content.value)) {
      return { kind: "no_answer", reason: "facts payload is not canonical JSON", sent: true };
    }
    const f = content.value as JsonObject;
    if (f.node_id !== r.response.responder || f.boot_id !== r.response.boot_id) {
      return { kind: "no_answer", reason: "facts name another node or boot than the answer", sent: true };
    }
    return {
      kind: "described",
      nodeId: r.response.responder,
      bootId: r.response.boot_id,
      key: r.key,
      facts: f,
      signedFacts: parsedFacts.data,
      result: r.result,
    };
  }
}

/** The tree size line of a checkpoint note this process signed (the second line). */
function checkpointSizeOf(note: string): number | null {
  const size = Number(note.split("\n")[1]);
  return Number.isSafeInteger(size) ? size : null;
}

/** The node proved another key than the expected one in the TLS handshake: nothing was sent. */
function keyRefused(addr: string, expected: string, presented: string): CallResult {
  return {
    kind: "no_answer",
    reason: `the node at ${addr} proved key ${presented} in the TLS handshake, not the stored ${expected}: refused before sending anything`,
    sent: false,
    offered_key: presented,
  };
}

export type DescribeResult =
  | {
      readonly kind: "described";
      readonly nodeId: string;
      readonly bootId: string;
      readonly key: string;
      readonly facts: JsonObject;
      readonly signedFacts: SignedMessage;
      readonly result: JsonObject;
    }
  | Exclude<CallResult, { kind: "ok" }>;
