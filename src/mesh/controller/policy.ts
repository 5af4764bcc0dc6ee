/**
 * The controller's policy files in its data directory (spec/mesh.md §3.5, §5.3, §7.2, §7.5): peers.json, signers.json,
 * permits.json and revocations.json. They are small and re-read on every use, so an operator's edit takes effect on
 * the next placement without a restart. Every file fails closed: an unreadable peers file demotes every target to
 * `discovered`, an invalid signers file trusts nobody, an invalid permits file permits nothing, and an unreadable
 * revocation list denies everything but teardown. Each change of a file (or of its validity) is chained once as
 * `policy.load`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { EventDraft } from "../../core/chain/event.js";
import type { PermitRule, RevocationList } from "../../core/governance/policy.js";
import { describeIssues, HEX64, truncateUtf8 } from "../../core/protocol/messages.js";
import { loadPermits, loadRevocations, loadSigners, type PolicyFile } from "../policy/files.js";
import { sha256 } from "../../core/crypto/tagged.js";
import { err, ok, type Result } from "../../kit/result.js";

export const PEERS_FILE = "peers.json";

export const PeerEntrySchema = z.strictObject({
  addr: z.string().min(1).max(300),
  key: z.string().regex(HEX64, "key must be 64 lowercase hex").optional(),
  tier: z.enum(["discovered", "paired", "pinned"]).default("paired"),
  name: z.string().max(64).optional(),
});
export type PeerEntry = z.infer<typeof PeerEntrySchema>;
export const PeersFileSchema = z.array(PeerEntrySchema).max(256);

/** The peers file's entries; `null`: no peers file (tiers come from the API only). */
export type PeersLoad = Result<readonly PeerEntry[] | null>;

export interface ControllerPolicy {
  readonly signers: ReadonlySet<string>;
  readonly permits: readonly PermitRule[];
  /** Issue 33: why permits.json loaded no rule (the field named), or null when it loaded. */
  readonly permitsError?: string | null;
  /** `null`: unreadable (fail closed for everything but teardown). */
  readonly revocations: RevocationList | null;
  readonly peers: PeersLoad;
}

/** Reads the peers file (also for the read-only view of the home, stored-reads.ts, which chains nothing). */
export function loadPeers(dataDir: string): PolicyFile<PeerEntry[] | null> {
  const path = join(dataDir, PEERS_FILE);
  if (!existsSync(path)) return { file: PEERS_FILE, sha256: null, loaded: ok(null) };
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    return {
      file: PEERS_FILE,
      sha256: null,
      loaded: err(`cannot read ${PEERS_FILE}: ${(error as Error).message}`),
    };
  }
  const digest = sha256(text).toString("hex");
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { file: PEERS_FILE, sha256: digest, loaded: err("peers file is not valid JSON") };
  }
  const parsed = PeersFileSchema.safeParse(raw);
  return {
    file: PEERS_FILE,
    sha256: digest,
    loaded: parsed.success ? ok(parsed.data) : err(describeIssues("peers", parsed.error.issues)),
  };
}

/**
 * Reads the four files and reports which of them differ from what was last recorded, as `policy.load` drafts.
 * "Last recorded" comes from the chain itself (`recorded`), not from this process's memory: many processes open the
 * same controller (every CLI call, the server), and a file that did not change is not an event (spec/audit-chain.md §12:
 * observations that change nothing are never chained), however many times it is read.
 */
export class PolicyFiles {
  private readonly seen = new Map<string, string>();
  private seeded = false;

  constructor(
    readonly dataDir: string,
    private readonly recorded: () => Promise<ReadonlyMap<string, string>> = async () => new Map(),
  ) {}

  async read(): Promise<{ policy: ControllerPolicy; events: EventDraft[] }> {
    const signers = loadSigners(this.dataDir);
    const permits = loadPermits(this.dataDir);
    const revocations = loadRevocations(this.dataDir);
    const peers = loadPeers(this.dataDir);
    const files = [signers, permits, revocations, peers] as Array<PolicyFile<unknown>>;
    const fingerprintOf = (f: PolicyFile<unknown>) => `${f.sha256}:${f.loaded.ok}`;
    // Memory is only a cache of the chain: on first use, and whenever a file looks changed, the chain is asked what
    // was last recorded, so a change another process already recorded is not recorded twice.
    if (!this.seeded || files.some((f) => this.seen.get(f.file) !== fingerprintOf(f))) {
      for (const [file, fingerprint] of await this.recorded()) this.seen.set(file, fingerprint);
      this.seeded = true;
    }
    const events: EventDraft[] = [];
    for (const f of files) {
      const fingerprint = fingerprintOf(f);
      if (this.seen.get(f.file) === fingerprint) continue;
      const first = !this.seen.has(f.file);
      this.seen.set(f.file, fingerprint);
      // A missing, never-recorded file is the default state, not a load worth recording.
      if (first && f.sha256 === null && f.loaded.ok) continue;
      events.push({
        source: "trust",
        kind: "policy.load",
        payload: {
          file: f.file,
          sha256: f.sha256,
          ok: f.loaded.ok,
          error: f.loaded.ok ? null : truncateUtf8(f.loaded.error, 512),
        },
      });
    }
    return {
      policy: {
        signers: new Set(signers.loaded.ok ? signers.loaded.value : []),
        permits: permits.loaded.ok ? permits.loaded.value : [],
        permitsError: permits.loaded.ok ? null : `${permits.file}: ${permits.loaded.error}`,
        revocations: revocations.loaded.ok ? revocations.loaded.value : null,
        peers: peers.loaded,
      },
      events,
    };
  }
}
