/**
 * `berth __complete agents|instances|contexts` (hidden): the names shell completion offers after `berth agent VERB`,
 * `berth instance VERB` and `berth context use|remove`, one per line. Fast and quiet: the local databases are read
 * read-only with one query (no controller is opened, nothing is settled or described), a context's server is asked
 * for its list, and any failure prints nothing (a completion must never print an error into the command line).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";

export const NAME_KINDS = ["agents", "instances", "contexts"] as const;
export type NameKind = (typeof NAME_KINDS)[number];

async function namesIn(file: string, table: string, sql: string): Promise<string[]> {
  if (!existsSync(file)) return [];
  const { openDatabase } = await import("../store/sqlite.js");
  const db = openDatabase(file, { readonly: true });
  try {
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) === undefined) return [];
    return (db.prepare(sql).all() as Array<{ name: string }>).map((r) => r.name);
  } finally {
    db.close();
  }
}

async function localNames(home: string, kind: "agents" | "instances"): Promise<string[]> {
  const controller = join(home, "controller.db");
  if (kind === "instances")
    return namesIn(
      controller,
      "mesh_placements",
      "SELECT instance_id AS name FROM mesh_placements ORDER BY instance_id",
    );
  // The registry is the controller store's (issue 20); a home no verb has opened since may still list its agents
  // in agents.db, taken into the store by the next verb.
  const names = new Set([
    ...(await namesIn(controller, "agent_registry", "SELECT name FROM agent_registry")),
    ...(await namesIn(join(home, "agents.db"), "agents", "SELECT name FROM agents")),
  ]);
  return [...names].sort();
}

async function names(kind: NameKind): Promise<string[]> {
  if (kind === "contexts") {
    const { readContexts } = await import("./remote/contexts.js");
    return ["local", ...Object.keys(readContexts().contexts)];
  }
  const { resolveController } = await import("./remote/target.js");
  const target = await resolveController({});
  if (target.kind === "local") return localNames(target.home, kind);
  const { apiRequest } = await import("./remote/http.js");
  const a = await apiRequest(target.server, "GET", kind === "agents" ? "/agents" : "/placements");
  if (a.status !== 200) return [];
  const body = a.body as { agents?: Array<{ name: string }>; placements?: Array<{ instance_id: string }> };
  return kind === "agents" ? (body.agents ?? []).map((x) => x.name) : (body.placements ?? []).map((x) => x.instance_id);
}

export function registerCompleteNames(program: Command): void {
  program
    .command("__complete <kind>", { hidden: true })
    .description("names for shell completion: agents, instances or contexts")
    .action(async (kind: string) => {
      if (!(NAME_KINDS as readonly string[]).includes(kind)) return;
      try {
        const list = await names(kind as NameKind);
        // Shell words only: a name with anything else in it is left out rather than quoted into the command line.
        process.stdout.write(
          list
            .filter((n) => /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(n))
            .map((n) => `${n}\n`)
            .join(""),
        );
      } catch {
        // nothing to offer
      }
    });
}
