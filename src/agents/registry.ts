/**
 * The agents berth was asked to run: name → target and the spec last deployed, in `<berth home>/agents.db`. It is what
 * `berth agents` lists and what `berth agent replace NAME` re-deploys. It holds no state of any target: every verb
 * observes the target afresh, so a lost or stale registry can never make berth act on the wrong instance.
 */
import { join } from "node:path";
import type { DeployTarget } from "../core/agents/deploy-event.js";
import { type Db, ensureSchema, openDatabase, withWriteTx } from "../store/sqlite.js";

export const AGENTS_DB = "agents.db";
const SCHEMA_VERSION = 1;

export interface AgentRecord {
  readonly name: string;
  readonly target: DeployTarget;
  /** Absolute path of the spec file as last deployed (relative paths in it resolve against it). */
  readonly spec_path: string;
  /** The spec text as last deployed. */
  readonly spec_text: string;
  readonly intent: string;
  readonly deployed_ms: number;
}

export class AgentRegistry {
  private constructor(private readonly db: Db) {}

  static open(home: string): AgentRegistry {
    const db = openDatabase(join(home, AGENTS_DB));
    try {
      withWriteTx(db, (tx) =>
        ensureSchema(tx, "agents", SCHEMA_VERSION, (from) => {
          if (from === 0) {
            tx.db.exec(`CREATE TABLE agents (name TEXT PRIMARY KEY, target TEXT NOT NULL, spec_path TEXT NOT NULL,
                                             spec_text TEXT NOT NULL, intent TEXT NOT NULL, deployed_ms INTEGER NOT NULL)`);
          }
        }),
      );
    } catch (error) {
      db.close();
      throw error;
    }
    return new AgentRegistry(db);
  }

  remember(r: AgentRecord): void {
    withWriteTx(this.db, (tx) => {
      tx.db
        .prepare(
          `INSERT INTO agents (name, target, spec_path, spec_text, intent, deployed_ms) VALUES (?,?,?,?,?,?)
           ON CONFLICT(name) DO UPDATE SET target = excluded.target, spec_path = excluded.spec_path,
             spec_text = excluded.spec_text, intent = excluded.intent, deployed_ms = excluded.deployed_ms`,
        )
        .run(r.name, r.target, r.spec_path, r.spec_text, r.intent, r.deployed_ms);
    });
  }

  get(name: string): AgentRecord | null {
    return (this.db.prepare("SELECT * FROM agents WHERE name = ?").get(name) as AgentRecord | undefined) ?? null;
  }

  list(): AgentRecord[] {
    return this.db.prepare("SELECT * FROM agents ORDER BY name").all() as AgentRecord[];
  }

  close(): void {
    this.db.close();
  }
}
