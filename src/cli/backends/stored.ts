/**
 * Issue 35: the lists on this machine's files (`berth nodes list`, `berth instances`, `berth agents` without
 * `--refresh`), answered from the controller store opened read-only (src/mesh/controller/stored-reads.ts), writing
 * nothing. This file loads only what those reads need: every other verb, and a list the read-only view cannot answer
 * (a PostgreSQL store, tables at another version, a key file that does not load, a Kubernetes agent), goes to
 * local.ts, loaded only then.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { selectedRecords } from "../../agents/selected.js";
import { storedAgentStates } from "../../agents/stored-states.js";
import { parseSelector } from "../../core/agents/labels.js";
import { loadKeyFile } from "../../keys/key-file.js";
import { deadAfterFromEnv } from "../../mesh/controller/dead-after.js";
import {
  type SnapshotPart,
  StoredReads,
  StoredReadsError,
  type StoredSnapshot,
} from "../../mesh/controller/stored-reads.js";
import { storedInstances, targetRows } from "../../mesh/controller/views.js";
import { parseDatabaseAddress } from "../../store/open.js";
import { databaseOf } from "../database.js";
import { CliError, homeMissing, invalidInput, noHome } from "../errors.js";
import { defaultPaths } from "../paths.js";
import type { BackendFlags, ControllerBackend } from "./types.js";

/** A home with no controller store: nothing was placed or deployed from it (and a read makes none). */
const EMPTY: StoredSnapshot = {
  targets: [],
  admins: [],
  placements: [],
  placed: [],
  moved: [],
  agents: [],
  unsettled: new Set(),
  observations: new Map(),
};

/**
 * Issue 36: a read never makes a home. A shell without the exported BERTH_HOME used to get a new, empty one (with a
 * fresh controller key) and the answer "no agents"; now it is told where berth looked and how to start one. On
 * PostgreSQL (--database, $BERTH_DATABASE_URL) the store is not in the home, so there is nothing to look for.
 */
export function homeRead(dataDir: string, database: string | undefined) {
  return <T>(fn: () => Promise<T>): Promise<T> =>
    databaseOf(database) || !homeMissing(dataDir) ? fn() : Promise.reject(noHome(dataDir));
}

/**
 * A list answered from the store as it is. `fallback` (the controller opened as for every other verb) when the
 * read-only view cannot answer as the controller would (stored-reads.ts `open` says when).
 */
export function storedRead(flags: BackendFlags & { readonly dataDir: string }) {
  const read = homeRead(flags.dataDir, flags.database);
  return <T>(
    parts: readonly SnapshotPart[],
    fn: (s: StoredSnapshot) => Promise<T>,
    fallback: () => Promise<T>,
  ): Promise<T> =>
    read(async () => {
      const address = parseDatabaseAddress(databaseOf(flags.database), resolve(flags.dataDir, "controller.db"));
      if (address.kind !== "sqlite") return fallback();
      if (!existsSync(address.path)) return fn(EMPTY);
      let publicKey: string;
      try {
        publicKey = loadKeyFile(flags.keyFile ?? defaultPaths.controllerKey()).publicKey;
      } catch {
        return fallback();
      }
      let reads: StoredReads | "empty" | null;
      try {
        reads = await StoredReads.open({
          dataDir: flags.dataDir,
          sqlitePath: address.path,
          publicKey,
          deadAfterMs: deadAfterFromEnv(process.env),
        });
      } catch (error) {
        if (error instanceof StoredReadsError)
          throw new CliError(`cannot open the controller state in ${flags.dataDir}: ${error.message}`);
        throw error;
      }
      if (reads === null) return fallback();
      if (reads === "empty") return fn(EMPTY);
      try {
        return await fn(await reads.snapshot(parts));
      } finally {
        await reads.close();
      }
    });
}

/** The local backend with the three lists answered here and every other call passed to local.ts, loaded on first use. */
export function localLists(
  flags: BackendFlags & { readonly dataDir: string },
  full: () => Promise<ControllerBackend>,
): ControllerBackend {
  const stored = storedRead(flags);
  let loaded: Promise<ControllerBackend> | null = null;
  const b = () => {
    loaded ??= full();
    return loaded;
  };
  /** A Kubernetes agent is looked at in its cluster: that list is local.ts's (its stored path asks the cluster). */
  class NeedsFull extends Error {}
  return {
    where: "local",
    // A selector is judged on the nodes' signed facts, which only describing them gives (issue 36): local.ts asks.
    targets: (refresh, selector) =>
      refresh || (selector !== undefined && selector !== "")
        ? b().then((x) => x.targets(refresh, selector))
        : stored(
            ["targets"],
            async (s) => targetRows(s.targets, [], s.admins),
            () => b().then((x) => x.targets(false)),
          ),
    // Issue 36: a selector is judged on the agents' labels, which local.ts reads from the registry.
    instances: (refresh, selector) =>
      refresh || (selector !== undefined && selector !== "")
        ? b().then((x) => x.instances(refresh, selector))
        : stored(
            ["placements"],
            async (s) => ({ placements: storedInstances(s.placements, s.observations), moved: s.moved }),
            () => b().then((x) => x.instances(false)),
          ),
    agents: async (refresh, selector) => {
      if (refresh) return (await b()).agents(true, selector);
      // Issue 36: the same parse and the same error text as local.ts's live list.
      const parsed = parseSelector(selector ?? "");
      if (!parsed.ok) throw invalidInput(`-l: ${parsed.error}`);
      try {
        // Without a selector no mesh agent's spec is read (stored-states.ts): the snapshot leaves those texts out.
        return await stored(
          [parsed.value.length === 0 ? "agents-listed" : "agents"],
          (s) =>
            storedAgentStates(selectedRecords(s.agents, parsed.value), s, () => {
              throw new NeedsFull();
            }),
          () => b().then((x) => x.agents(false, selector)),
        );
      } catch (error) {
        if (error instanceof NeedsFull) return (await b()).agents(false, selector);
        throw error;
      }
    },
    addTarget: async (...a) => (await b()).addTarget(...a),
    setTier: async (...a) => (await b()).setTier(...a),
    place: async (...a) => (await b()).place(...a),
    instance: async (...a) => (await b()).instance(...a),
    unsettled: async (...a) => (await b()).unsettled(...a),
    deploy: async (...a) => (await b()).deploy(...a),
    planDeploy: async (...a) => (await b()).planDeploy(...a),
    agentHistory: async (...a) => (await b()).agentHistory(...a),
    agentRollback: async (...a) => (await b()).agentRollback(...a),
    agentStatus: async (...a) => (await b()).agentStatus(...a),
    agentLogs: async (...a) => (await b()).agentLogs(...a),
    agentStop: async (...a) => (await b()).agentStop(...a),
    agentReplace: async (...a) => (await b()).agentReplace(...a),
    agentPurge: async (...a) => (await b()).agentPurge(...a),
    agentStart: async (...a) => (await b()).agentStart(...a),
    agentDelete: async (...a) => (await b()).agentDelete(...a),
    nodeAdmin: async (...a) => (await b()).nodeAdmin(...a),
  };
}
