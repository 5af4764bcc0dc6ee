/**
 * The controller's home read as stored, writing nothing (issue 35): what `berth nodes list`, `berth instances` and
 * `berth agents` answer by default from the CLI. The SQLite store is opened read-only (no migration, no owner lease,
 * no contact rows, no policy events), so any number of readers run beside each other and beside a writer (a deploy, a
 * `berth serve`) and none of them can fail with "another berth process is writing this database".
 *
 * What it does not do, and why that is safe:
 * - it never asks a node: liveness is the stored contacts judged now (as every process judges them, targets.ts), and
 *   an instance's state is what its node last reported as recorded (store-observations.ts: the serve loop's pass, a
 *   deploy, a `--refresh`), shown with its age, or "unknown (never seen)" (`--refresh` asks the nodes through the
 *   writable controller);
 * - it applies the peers file to the tiers it shows without chaining anything (a file that cannot be read shows every
 *   node `discovered`, fail closed as the controller would); the next process that writes records the change;
 * - it checks that the chain is this key's (a foreign store is refused as at open) but verifies no signatures: reading
 *   changes nothing in the store, so the start-up check belongs to the processes that append (`berth audit verify`
 *   verifies the whole chain on demand).
 *
 * `open` answers `null` when the read-only view cannot answer as the controller would: a PostgreSQL store (its reads
 * already write nothing to this machine; the caller opens the controller as before) or tables at another schema version
 * (a migration is a write: the caller's writable open does it).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ownChainOn } from "../../chain/engine-chain.js";
import type { AgentRecord } from "../../core/agents/registry.js";
import type { Tier } from "../../core/identity/tier.js";
import type { ObservedInstance } from "../../core/mesh/instance-observation.js";
import { DEFAULT_DEAD_AFTER_MS, judgeNodeLiveness } from "../../core/mesh/node-liveness.js";
import type { Query } from "../../store/engine.js";
import { schemaVersionOf } from "../../store/schema.js";
import { SqliteEngine } from "../../store/sqlite-engine.js";
import { adminsOn, type MovedRecord, movedOn, type NodeAdmin } from "./move-records.js";
import { loadPeers, type PeerEntry } from "./policy.js";
import { agentRecords } from "./store-agents.js";
import { observationsOn } from "./store-observations.js";
import { placedNamesOn, placementsOn } from "./store-placements.js";
import type { PlacementRecord, StoredContact, StoredTarget } from "./store-records.js";
import { CONTROLLER_SCHEMA_VERSION } from "./store-schema.js";
import * as targetSql from "./store-targets.js";
import type { TargetInfo } from "./targets.js";

export class StoredReadsError extends Error {
  override name = "StoredReadsError";
}

/** The stored rows one list needs, read in one read transaction (one snapshot of the store). */
export interface StoredSnapshot {
  readonly targets: TargetInfo[];
  readonly admins: NodeAdmin[];
  readonly placements: PlacementRecord[];
  /** Every placement's name and instance id, oldest first: what `berth agents` reads of them (part `agents`). */
  readonly placed: ReadonlyArray<{ readonly name: string; readonly instance_id: string }>;
  readonly moved: MovedRecord[];
  readonly agents: AgentRecord[];
  /** Names with an unsettled decision (a lost answer not yet settled). */
  readonly unsettled: ReadonlySet<string>;
  /** Each placed instance as its node last reported it (schema v12), by instance id: what the lists show as last seen. */
  readonly observations: ReadonlyMap<string, ObservedInstance>;
}

/**
 * `agents-listed`: the agents as `agents` reads them, but the spec text only of Kubernetes agents (a mesh agent's reads
 * as ""): what `berth agents` without a selector reads of them (issue 35: the spec texts were its largest read).
 */
export type SnapshotPart = "targets" | "placements" | "agents" | "agents-listed";

export class StoredReads {
  private constructor(
    private readonly engine: SqliteEngine,
    private readonly dataDir: string,
    private readonly deadAfterMs: number,
    private readonly clock: () => number,
  ) {}

  /**
   * The home's SQLite store read-only; `null` when the caller must open the controller instead (see the header).
   * `empty` when the home has no controller store yet: nothing was ever placed or deployed from it, and nothing is made.
   */
  static async open(o: {
    readonly dataDir: string;
    readonly sqlitePath?: string;
    /** The controller's public key: the store's own chain must be this key's (a foreign store is refused). */
    readonly publicKey: string;
    readonly deadAfterMs?: number;
    readonly clock?: () => number;
  }): Promise<StoredReads | "empty" | null> {
    const path = o.sqlitePath ?? join(o.dataDir, "controller.db");
    if (!existsSync(path)) return "empty";
    const engine = SqliteEngine.open(path, { readonly: true });
    try {
      const usable = await engine.read(async (q) => {
        if ((await schemaVersionOf(q, "mesh_controller")) !== CONTROLLER_SCHEMA_VERSION) return false;
        const own = await ownChainOn(q);
        if (own && own.owner_key !== o.publicKey) {
          throw new StoredReadsError(
            `the controller store ${path} belongs to key ${own.owner_key}, not to this home's controller key ${o.publicKey}; name the home it was made with (--data-dir) or its key (--key-file)`,
          );
        }
        return own !== undefined;
      });
      if (!usable) {
        await engine.close();
        return null;
      }
      return new StoredReads(engine, o.dataDir, o.deadAfterMs ?? DEFAULT_DEAD_AFTER_MS, o.clock ?? Date.now);
    } catch (error) {
      await engine.close();
      throw error;
    }
  }

  /** One read of the parts asked for; the others are empty. */
  async snapshot(parts: readonly SnapshotPart[]): Promise<StoredSnapshot> {
    const want = new Set(parts);
    const agents = want.has("agents") || want.has("agents-listed");
    const peers = want.has("targets") ? loadPeers(this.dataDir).loaded : null;
    return this.engine.read(async (q: Query) => {
      const now = this.clock();
      const targets = want.has("targets") ? await targetSql.targets(q) : [];
      const contacts = want.has("targets") ? await targetSql.contacts(q) : new Map<string, StoredContact>();
      const unsettled = agents
        ? new Set(
            (await q.all<{ name: string }>("SELECT name FROM mesh_decisions WHERE state = 'unsettled'")).map(
              (r) => r.name,
            ),
          )
        : new Set<string>();
      const placements = want.has("placements") ? await placementsOn(q) : [];
      return {
        targets: targets.map((t) => storedTargetInfo(t, contacts.get(t.addr), peers, now, this.deadAfterMs)),
        admins: want.has("targets") ? await adminsOn(q) : [],
        placements,
        placed: want.has("placements") ? placements : agents ? await placedNamesOn(q) : [],
        moved: want.has("placements") ? await movedOn(q) : [],
        agents: want.has("agents")
          ? await agentRecords(q)
          : want.has("agents-listed")
            ? await agentRecords(q, { meshSpecs: false })
            : [],
        unsettled,
        observations: want.has("placements") || agents ? await observationsOn(q) : new Map<string, ObservedInstance>(),
      };
    });
  }

  async close(): Promise<void> {
    await this.engine.close();
  }
}

type PeersLoaded = ReturnType<typeof loadPeers>["loaded"] | null;

/** The tier the peers file gives a stored target now, as Targets.syncPeers would record it (nothing chained here). */
function tierNow(t: StoredTarget, peers: PeersLoaded): Tier {
  if (peers === null || (peers.ok && peers.value === null)) return t.tier;
  if (!peers.ok) return "discovered";
  const listed: PeerEntry | undefined = (peers.value ?? []).find((e) => e.addr === t.addr);
  if (listed === undefined) return t.tier_source === "peers" ? "discovered" : t.tier;
  // A listed new key demotes the stored one until the new key answers (targets.ts, demoteReplacedKey).
  if (listed.key !== undefined && t.key !== null && listed.key !== t.key) return "discovered";
  return t.key === null ? t.tier : listed.tier;
}

/** What the lists show for one stored target: no boot id and no facts (only a describe by this process has those). */
function storedTargetInfo(
  t: StoredTarget,
  contact: StoredContact | undefined,
  peers: PeersLoaded,
  nowMs: number,
  deadAfterMs: number,
): TargetInfo {
  return {
    addr: t.addr,
    node_id: t.node_id,
    key: t.key,
    name: contact?.name ?? null,
    tier: tierNow(t, peers),
    tier_source: t.tier_source,
    liveness: judgeNodeLiveness(contact ?? { last_ok_ms: null, unreachable_since_ms: null }, nowMs, deadAfterMs),
    unreachable_since_ms: contact?.unreachable_since_ms ?? null,
    boot_id: null,
    learned_ms: t.learned_ms,
    last_ok_ms: contact?.last_ok_ms ?? null,
    facts_expire_at_ms: null,
    error: contact?.last_error ?? null,
  };
}
