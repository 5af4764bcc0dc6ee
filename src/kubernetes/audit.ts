/**
 * Audit records of the Kubernetes backend (spec/kubernetes.md §17, spec/audit-chain.md §12 `k8s.*`). Every mutation is a
 * write-ahead pair sharing an `action_id`: an `intent` before the API call — if it cannot be appended the call is not
 * made (E2) — and a `result` after. A crash leaves a visible intent without a result. Payloads never carry env
 * values, the nsec, `auth_tag`, Secret data, kubelet messages or log output; callers pass names and verdicts only.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { Chain } from "../chain/chain.js";
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
  /** `berth serve`'s reconcile loop (issue 16): one per distinct reason per agent. */
  | "k8s.alert";

export class AuditWriteError extends Error {
  override name = "AuditWriteError";
}

export interface K8sAudit {
  /** Appends the intent record and returns its action id; throws `AuditWriteError` if it cannot be appended. */
  intent(kind: K8sKind, payload: JsonObject): string;
  /** Appends the matching result record; a failure here is reported to the caller to log, never retried. */
  result(actionId: string, kind: K8sKind, payload: JsonObject): void;
  /** A single record (verb start/end, deploy outcome). */
  record(kind: K8sKind, payload: JsonObject): void;
  close(): void;
}

const newActionId = () => randomBytes(16).toString("hex");

/** The chain-backed audit: one SQLite transaction per record, source `k8s`. */
export class ChainAudit implements K8sAudit {
  constructor(
    private readonly chain: Chain,
    private readonly onClose: () => void = () => {},
  ) {}

  private append(kind: K8sKind, payload: JsonObject): void {
    try {
      this.chain.record({ source: "k8s", kind, payload }, () => undefined);
    } catch (error) {
      throw new AuditWriteError(error instanceof Error ? error.message : String(error));
    }
  }

  intent(kind: K8sKind, payload: JsonObject): string {
    const actionId = newActionId();
    this.append(kind, { phase: "intent", action_id: actionId, ...payload });
    return actionId;
  }

  result(actionId: string, kind: K8sKind, payload: JsonObject): void {
    this.append(kind, { phase: "result", action_id: actionId, ...payload });
  }

  record(kind: K8sKind, payload: JsonObject): void {
    this.append(kind, { phase: kind === "k8s.deploy.outcome" ? "outcome" : String(payload.phase ?? "record"), ...payload });
  }

  close(): void {
    this.onClose();
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
  const key = existsSync(paths.key) ? loadKeyFile(paths.key) : (() => {
    const k = generateSigningKey();
    saveKeyFile(paths.key, k);
    return k;
  })();
  const db = openDatabase(paths.db);
  try {
    const chain = Chain.open(db, key, "k8s", clock);
    return new ChainAudit(chain, () => db.close());
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

export type ChainOpening = { ok: true; audit: ChainAudit; home: string; skipped: ReadonlyArray<{ home: string; error: string }> } | { ok: false; error: string };

/**
 * The first of `homes` whose chain opens (issue 18.7): the configured home, then fallbacks, so that an unusable home
 * (read-only, a path through a file, a full disk) does not fail a deploy that would otherwise reach the cluster. The
 * write-ahead rule is unchanged: a deploy proceeds only with some chain open.
 */
export function openFirstK8sChain(homes: readonly string[], clock: () => number = Date.now): ChainOpening {
  const skipped: Array<{ home: string; error: string }> = [];
  for (const home of homes) {
    try {
      return { ok: true, audit: openK8sChain(home, clock), home, skipped };
    } catch (error) {
      skipped.push({ home, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return { ok: false, error: skipped.map((s) => `${s.home}: ${s.error}`).join("; ") };
}

export interface MemoryRecord {
  readonly kind: K8sKind;
  readonly payload: JsonObject;
}

/** For tests: records in memory, and can be told to refuse intents (to prove E2 stops the mutation). */
export class MemoryAudit implements K8sAudit {
  readonly records: MemoryRecord[] = [];
  failIntents = false;

  intent(kind: K8sKind, payload: JsonObject): string {
    if (this.failIntents) throw new AuditWriteError("disk I/O error");
    const actionId = newActionId();
    this.records.push({ kind, payload: { phase: "intent", action_id: actionId, ...payload } });
    return actionId;
  }

  result(actionId: string, kind: K8sKind, payload: JsonObject): void {
    this.records.push({ kind, payload: { phase: "result", action_id: actionId, ...payload } });
  }

  record(kind: K8sKind, payload: JsonObject): void {
    this.records.push({ kind, payload: { phase: kind === "k8s.deploy.outcome" ? "outcome" : String(payload.phase ?? "record"), ...payload } });
  }

  close(): void {}

  of(kind: K8sKind, phase?: string): JsonObject[] {
    return this.records.filter((r) => r.kind === kind && (phase === undefined || r.payload.phase === phase)).map((r) => r.payload);
  }
}
