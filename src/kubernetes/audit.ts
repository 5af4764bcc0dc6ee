/**
 * Audit records of the Kubernetes backend (spec/kubernetes.md §17, spec/audit-chain.md §12 `k8s.*`). Every mutation is a
 * write-ahead pair sharing an `action_id`: an `intent` before the API call — if it cannot be appended the call is not
 * made (E2) — and a `result` after. A crash leaves a visible intent without a result. Payloads never carry env
 * values, the nsec, `auth_tag`, Secret data, kubelet messages or log output; callers pass names and verdicts only.
 *
 * Where they go (issue 20): the backend's own chain `$BERTH_HOME/k8s.db` (this file), or — for the controller's
 * backend (server, CLI verbs, the keeper) when the controller store is PostgreSQL — that store's chain
 * (store-audit.ts), so every server on the store holds and verifies the same record.
 */
import type { Result } from "../kit/result.js";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { Chain } from "../chain/chain.js";
import type { EventDraft, SealedEvent } from "../core/chain/event.js";
import type { JsonObject } from "../core/crypto/canonical.js";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../keys/key-file.js";
import { openDatabase } from "../store/sqlite.js";

export type K8sKind =
  | "k8s.namespace.create"
  | "k8s.secret.create"
  | "k8s.pod.create"
  | "k8s.claim.create"
  | "k8s.pod.delete"
  | "k8s.secret.delete"
  | "k8s.stop"
  | "k8s.replace"
  | "k8s.deploy.outcome"
  /** `berth serve`'s keep loop (issue 16): one per distinct reason per agent. */
  | "k8s.alert";

export class AuditWriteError extends Error {
  override name = "AuditWriteError";
}

/**
 * Which chain a backend's records go to: its own (`k8s`, `$BERTH_HOME/k8s.db`, role `k8s`) or, when the controller's
 * store is PostgreSQL, the controller store's chain (`controller`, source `k8s`; issue 20, spec/audit-chain.md §6).
 */
export type K8sChainName = "controller" | "k8s";

/**
 * Asynchronous once, for every chain (the controller store's is on PostgreSQL): a caller awaits each record before
 * the API call it announces, so the write-ahead order is the order of the awaits.
 */
export interface K8sAudit {
  readonly chain: K8sChainName;
  /** Appends the intent record and returns its action id; rejects with `AuditWriteError` if it cannot be appended. */
  intent(kind: K8sKind, payload: JsonObject): Promise<string>;
  /** Appends the matching result record; a failure here is reported to the caller to log, never retried. */
  result(actionId: string, kind: K8sKind, payload: JsonObject): Promise<void>;
  /** A single record (verb start/end, deploy outcome, alert). */
  record(kind: K8sKind, payload: JsonObject): Promise<void>;
  /** An event of source `k8s` drafted elsewhere (`agent.deploy`, src/agents/audit.ts), returned sealed. */
  append(draft: EventDraft): Promise<SealedEvent>;
  close(): Promise<void>;
}

const newActionId = () => randomBytes(16).toString("hex");

/** The payloads of §17, whatever holds them: the `phase` every record carries and the `action_id` of a pair. */
const intentPayload = (actionId: string, payload: JsonObject): JsonObject => ({
  phase: "intent",
  action_id: actionId,
  ...payload,
});
const resultPayload = (actionId: string, payload: JsonObject): JsonObject => ({
  phase: "result",
  action_id: actionId,
  ...payload,
});
const recordPayload = (kind: K8sKind, payload: JsonObject): JsonObject => ({
  phase: kind === "k8s.deploy.outcome" ? "outcome" : String(payload.phase ?? "record"),
  ...payload,
});

/**
 * The records over one chain's append: one event per call, in a transaction of its own, source `k8s`. `seal` is the
 * chain's append (the backend's own SQLite chain, or the controller store's; store-audit.ts); any failure of it is an
 * `AuditWriteError`, which the write-ahead callers turn into E2 before the mutation.
 */
export class ChainAudit implements K8sAudit {
  constructor(
    readonly chain: K8sChainName,
    private readonly seal: (draft: EventDraft) => Promise<SealedEvent>,
    private readonly onClose: () => void | Promise<void> = () => {},
  ) {}

  async append(draft: EventDraft): Promise<SealedEvent> {
    if (draft.source !== "k8s")
      throw new AuditWriteError(`the Kubernetes audit appends only source k8s, not ${draft.source}`);
    try {
      return await this.seal(draft);
    } catch (error) {
      throw new AuditWriteError(error instanceof Error ? error.message : String(error));
    }
  }

  async intent(kind: K8sKind, payload: JsonObject): Promise<string> {
    const actionId = newActionId();
    await this.append({ source: "k8s", kind, payload: intentPayload(actionId, payload) });
    return actionId;
  }

  async result(actionId: string, kind: K8sKind, payload: JsonObject): Promise<void> {
    await this.append({ source: "k8s", kind, payload: resultPayload(actionId, payload) });
  }

  async record(kind: K8sKind, payload: JsonObject): Promise<void> {
    await this.append({ source: "k8s", kind, payload: recordPayload(kind, payload) });
  }

  async close(): Promise<void> {
    await this.onClose();
  }
}

/** Where a standalone Kubernetes backend keeps its own chain (role `k8s`, spec/audit-chain.md §6). */
export function k8sStatePaths(home: string): { db: string; key: string } {
  return { db: join(home, "k8s.db"), key: join(home, "keys", "k8s.key") };
}

/** Opens (creating on first use) the backend's own chain; the key file is created mode 0600 beside it. */
export function openK8sChain(home: string, clock: () => number = Date.now): ChainAudit {
  const paths = k8sStatePaths(home);
  if (!existsSync(dirname(paths.db))) mkdirSync(dirname(paths.db), { recursive: true, mode: 0o700 });
  const key = existsSync(paths.key)
    ? loadKeyFile(paths.key)
    : (() => {
        const k = generateSigningKey();
        saveKeyFile(paths.key, k);
        return k;
      })();
  const db = openDatabase(paths.db);
  try {
    const chain = Chain.open(db, key, "k8s", clock);
    // better-sqlite3 is synchronous: each record is one BEGIN IMMEDIATE transaction, done when the promise resolves.
    return new ChainAudit(
      "k8s",
      async (draft) => chain.record(draft, () => undefined).event,
      () => {
        db.close();
      },
    );
  } catch (error) {
    db.close();
    throw error;
  }
}

/** The chain at `home` if it already exists (k8s.db and its key), else null: a refusal never creates a home. */
export function openExistingK8sChain(home: string, clock: () => number = Date.now): ChainAudit | null {
  const paths = k8sStatePaths(home);
  return existsSync(paths.db) && existsSync(paths.key) ? openK8sChain(home, clock) : null;
}

export type ChainOpening = Result<{
  readonly audit: ChainAudit;
  readonly home: string;
  readonly skipped: ReadonlyArray<{ home: string; error: string }>;
}>;

/**
 * The first of `homes` whose chain opens (issue 18.7): the configured home, then fallbacks, so that an unusable home
 * (read-only, a path through a file, a full disk) does not fail a deploy that would otherwise reach the cluster. The
 * write-ahead rule is unchanged: a deploy proceeds only with some chain open.
 */
export function openFirstK8sChain(homes: readonly string[], clock: () => number = Date.now): ChainOpening {
  const skipped: Array<{ home: string; error: string }> = [];
  for (const home of homes) {
    try {
      return { ok: true, value: { audit: openK8sChain(home, clock), home, skipped } };
    } catch (error) {
      skipped.push({ home, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return { ok: false, error: skipped.map((s) => `${s.home}: ${s.error}`).join("; ") };
}

export interface MemoryRecord {
  /** A `K8sKind`, or the kind of an appended draft (`agent.deploy`). */
  readonly kind: string;
  readonly payload: JsonObject;
}

/** For tests: records in memory, and can be told to refuse intents (to prove E2 stops the mutation). */
export class MemoryAudit implements K8sAudit {
  readonly chain: K8sChainName = "k8s";
  readonly records: MemoryRecord[] = [];
  failIntents = false;

  async intent(kind: K8sKind, payload: JsonObject): Promise<string> {
    if (this.failIntents) throw new AuditWriteError("disk I/O error");
    const actionId = newActionId();
    this.records.push({ kind, payload: intentPayload(actionId, payload) });
    return actionId;
  }

  async result(actionId: string, kind: K8sKind, payload: JsonObject): Promise<void> {
    this.records.push({ kind, payload: resultPayload(actionId, payload) });
  }

  async record(kind: K8sKind, payload: JsonObject): Promise<void> {
    this.records.push({ kind, payload: recordPayload(kind, payload) });
  }

  async append(draft: EventDraft): Promise<SealedEvent> {
    this.records.push({ kind: draft.kind, payload: draft.payload });
    const seq = this.records.length;
    return {
      seq,
      chain_id: "memory",
      ts: 0,
      prev_hash: "",
      source: draft.source,
      kind: draft.kind,
      payload: draft.payload,
      payload_hash: "",
      hash: `memory-${seq}`,
      sig: "",
    };
  }

  async close(): Promise<void> {}

  of(kind: K8sKind, phase?: string): JsonObject[] {
    return this.records
      .filter((r) => r.kind === kind && (phase === undefined || r.payload.phase === phase))
      .map((r) => r.payload);
  }
}
