/**
 * Issue 33 item 6: revocation reaches every node. The controller's own `revocations.json` is the list it publishes;
 * `berth revoke`/`unrevoke` edit it (a new `generation`, the list's sequence) and chain one `workload.revoke` /
 * `workload.unrevoke` per subject, and every generation is published once with a chained `revocations.publish`
 * event whose hash is the decision id that authorises pushing it (I4). The list is pushed whole, signed as every
 * request is by the controller's key (method `revocations`), to every node the controller knows:
 *
 * - at once by `berth revoke`/`unrevoke`, then at every contact: before a placement (after its refresh), and on
 *   every lifecycle tick of `berth serve`; a node that was unreachable gets it the first time it answers again;
 * - each node's acknowledged generation is stored (`mesh_revocation_nodes`); a node whose acknowledged list is older
 *   than the controller's is refused every placement (the gate's verdict, so the explain says why) until it has it;
 * - a node never goes back: it refuses a generation older than the one it holds (`precondition_failed`).
 *
 * Not promised: a node that never answers again keeps enforcing its older list (its instances are not reached); a
 * list edited by hand without raising `generation` is not pushed (the edit is refused, named, until it is raised).
 */
import type { EventDraft } from "../../core/chain/event.js";
import { canonicalJson, type JsonObject, type JsonValue } from "../../core/crypto/canonical.js";
import { sha256 } from "../../core/crypto/tagged.js";
import type { RevocationList } from "../../core/governance/policy.js";
import { err, ok, type Result } from "../../kit/result.js";
import { saveRevocationList } from "../policy/files.js";
import { loadRevocations } from "../policy/files.js";
import type { ControllerStore } from "./store.js";
import type { Targets } from "./targets.js";

export interface Publication {
  readonly generation: number;
  readonly list: RevocationList;
  readonly decisionId: string;
}

export type PushOutcome =
  | { readonly node: string; readonly kind: "current"; readonly generation: number }
  | { readonly node: string; readonly kind: "pushed"; readonly generation: number; readonly changed: boolean }
  | {
      readonly node: string;
      readonly kind: "behind";
      readonly held: number;
      readonly wanted: number;
      readonly reason: string;
    };

const digest = (list: RevocationList) => sha256(canonicalJson(list as unknown as JsonValue)).toString("hex");

/** Nothing to publish: no list, or the empty list of generation 0 that every node holds without being told. */
const nothing = (list: RevocationList) => list.generation === 0 && list.subjects.length === 0;

/**
 * The publication of `list` (the controller's revocations.json as read now): found, or chained now (a list edited by
 * hand with a new generation is published the first time it is seen). A list whose generation was already
 * published with other content is refused: a node would take neither as newer.
 */
export async function publicationOf(
  store: ControllerStore,
  list: RevocationList,
  clock: () => number,
  withEvents: readonly EventDraft[] = [],
): Promise<Result<Publication | null>> {
  if (nothing(list) && withEvents.length === 0) return ok(null);
  const sum = digest(list);
  if (withEvents.length === 0) {
    // The common case, on every placement: published already; a read, no write transaction.
    const seen = await store.engine.read((q) =>
      q.get<{ sha256: string; decision_id: string }>(
        "SELECT sha256, decision_id FROM mesh_revocation_publications WHERE generation = ?",
        [list.generation],
      ),
    );
    if (seen && seen.sha256 === sum) return ok({ generation: list.generation, list, decisionId: seen.decision_id });
  }
  return store.engine.transaction(async (tx): Promise<Result<Publication>> => {
    const row = await tx.get<{ sha256: string; decision_id: string }>(
      "SELECT sha256, decision_id FROM mesh_revocation_publications WHERE generation = ?",
      [list.generation],
    );
    if (row) {
      if (row.sha256 !== sum) {
        return err(
          `revocations.json generation ${list.generation} was already published with other subjects; raise its generation (berth revoke does) so nodes take it as newer`,
        );
      }
      for (const e of withEvents) await store.chain.append(tx, e);
      return ok({ generation: list.generation, list, decisionId: row.decision_id });
    }
    for (const e of withEvents) await store.chain.append(tx, e);
    const published = await store.chain.append(tx, {
      source: "trust",
      kind: "revocations.publish",
      payload: { generation: list.generation, sha256: sum, subjects: list.subjects.length },
    });
    await tx.run(
      "INSERT INTO mesh_revocation_publications (generation, sha256, decision_id, published_ms) VALUES (?,?,?,?)",
      [list.generation, sum, published.hash, clock()],
    );
    return ok({ generation: list.generation, list, decisionId: published.hash });
  });
}

async function acked(store: ControllerStore, node: string): Promise<number> {
  const row = await store.engine.read((q) =>
    q.get<{ seq: number | string }>("SELECT seq FROM mesh_revocation_nodes WHERE node_id = ?", [node]),
  );
  return row ? Number(row.seq) : 0;
}

async function ack(store: ControllerStore, node: string, seq: number, at: number): Promise<void> {
  await store.engine.transaction((tx) =>
    tx.run(
      "INSERT INTO mesh_revocation_nodes (node_id, seq, acked_ms) VALUES (?,?,?) ON CONFLICT (node_id) DO UPDATE SET seq = excluded.seq, acked_ms = excluded.acked_ms",
      [node, seq, at],
    ),
  );
}

export interface PushDeps {
  readonly store: ControllerStore;
  readonly targets: Targets;
  readonly clock: () => number;
  readonly callTimeoutMs: number;
}

/**
 * Brings each node up to the published list: nothing for a node that acknowledged it, a push otherwise. Never throws
 * for what a node answered; a node that could not take it is `behind`, with why.
 */
export async function pushRevocations(
  deps: PushDeps,
  pub: Publication | null,
  nodes: readonly string[],
  push = true,
): Promise<PushOutcome[]> {
  const out: PushOutcome[] = [];
  // Nothing published (no list, or generation 0 and empty): every node holds it already; not one read per node.
  if (pub === null) return nodes.map((node) => ({ node, kind: "current", generation: 0 }));
  await Promise.all(
    nodes.map(async (node) => {
      const held = await acked(deps.store, node);
      if (held >= pub.generation) {
        out.push({ node, kind: "current", generation: held });
        return;
      }
      if (!push) {
        out.push({ node, kind: "behind", held, wanted: pub.generation, reason: "not pushed by a dry run" });
        return;
      }
      const r = await deps.targets.call(node, "revocations", pub.list as unknown as JsonObject, {
        decisionId: pub.decisionId,
        timeoutMs: deps.callTimeoutMs,
      });
      if (r.kind === "ok" && r.result.generation >= pub.generation) {
        await ack(deps.store, node, r.result.generation, deps.clock());
        out.push({ node, kind: "pushed", generation: r.result.generation, changed: r.result.changed });
        return;
      }
      const why =
        r.kind === "ok"
          ? "the node answered without the generation"
          : r.kind === "refused"
            ? `refused ${r.code}: ${r.reason}`
            : r.reason;
      out.push({ node, kind: "behind", held, wanted: pub.generation, reason: why });
    }),
  );
  return out.sort((a, b) => (a.node < b.node ? -1 : 1));
}

/** The gate's reason for a node still behind the published list (issue 33: placements refused there until it has it). */
export function behindReason(o: Extract<PushOutcome, { kind: "behind" }>): string {
  return `revocations: this node holds revocation list ${o.held}, the controller's is ${o.wanted} (${o.reason}); no placement here until it has the latest, which it gets at its next contact`;
}

/**
 * `berth revoke KIND ID --reason R` / `berth unrevoke KIND ID --reason R`: the controller's list changed (a new
 * generation), written durably, each subject chained, then published. The push to every node is the caller's.
 */
/** An edit published: the list's publication, and whether the edit changed it (false: it already was so). */
export interface RevocationEdit {
  readonly pub: Publication;
  readonly changed: boolean;
}

/** `berth revoke`'s answer: the generation published, whether it changed, and what each known node answered. */
export interface RevokeAnswer {
  readonly generation: number;
  readonly changed: boolean;
  readonly nodes: PushOutcome[];
}

export async function editRevocations(
  dataDir: string,
  store: ControllerStore,
  clock: () => number,
  edit: {
    readonly revoke: boolean;
    readonly kind: RevocationList["subjects"][number]["kind"];
    readonly id: string;
    readonly reason: string;
    readonly operator: JsonObject;
  },
): Promise<Result<RevocationEdit>> {
  const file = loadRevocations(dataDir);
  if (!file.loaded.ok) return err(`${file.file} cannot be read (${file.loaded.error}); fix or remove it first`);
  const list = file.loaded.value;
  const id = /^[0-9a-fA-F]+$/.test(edit.id) ? edit.id.toLowerCase() : edit.id;
  const present = list.subjects.some((s) => s.kind === edit.kind && s.id === id);
  let next: RevocationList = list;
  let events: EventDraft[] = [];
  if (edit.revoke !== present) {
    const generation = list.generation + 1;
    next = edit.revoke
      ? { generation, subjects: [...list.subjects, { kind: edit.kind, id, reason: edit.reason, at_ms: clock() }] }
      : { generation, subjects: list.subjects.filter((s) => !(s.kind === edit.kind && s.id === id)) };
    events = [
      {
        source: "trust",
        kind: edit.revoke ? "workload.revoke" : "workload.unrevoke",
        payload: { subject_kind: edit.kind, subject: id, reason: edit.reason, generation, operator: edit.operator },
      },
    ];
    saveRevocationList(dataDir, "revocations.json", next);
  }
  const published = await publicationOf(store, next, clock, events);
  if (!published.ok) return published;
  if (published.value === null) return err("nothing to publish");
  return ok({ pub: published.value, changed: edit.revoke !== present });
}
