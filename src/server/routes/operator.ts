/**
 * `berth doctor`, `berth node rehome` and `berth backup` over HTTP (contract-operator.ts): the same library calls the
 * CLI makes on its own files, with the caller (the token's id and its address) as the operator the chain records.
 * Written async with every store call awaited, so the asynchronous store (issue 20) needs no more than a merge here.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { z } from "zod";
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { MeshController } from "../../mesh/controller/index.js";
import type { Caller } from "../audit.js";
import type { OperatorInputs } from "../contract-operator.js";
import { ApiError, notFound } from "../errors.js";
import type { Answer, Handlers } from "../handler.js";

type In<T extends z.ZodType> = z.infer<T>;

export interface DoctorDocument {
  readonly repaired: boolean;
  readonly wedged: ReadonlyArray<{ decision_id: string; name: string; instance_id: string; node_id: string }>;
  readonly in_flight: ReadonlyArray<{ decision_id: string; name: string; state: string; owner: string }>;
}

/** What `berth doctor` reports (and, with `repair`, mends) in a controller's store; the CLI's files and the server alike. */
export async function doctorDocument(
  c: MeshController,
  repair: { operator: JsonObject } | null,
): Promise<DoctorDocument> {
  const wedged = repair ? await c.repairWedged(repair.operator) : await c.wedged();
  const owned = await c.store.ownedDecisions();
  // Decisions another process holds right now (a CLI beside the server, a second server): informational.
  const inFlight = owned
    .filter((o) => o.decision.owner_id !== c.store.lease.owner_id)
    .map((o) => ({ decision_id: o.decision.id, name: o.decision.name, state: o.decision.state, owner: o.verdict.why }));
  return { repaired: repair !== null, wedged, in_flight: inFlight };
}

/** The operator an API call acts as, in the chain: who holds the token, from where, through which route. */
export const apiOperator = (caller: Caller, route: string): JsonObject => ({
  via: `api ${route}`,
  who: caller.who,
  remote: caller.remote,
});

/** A RehomeResult as HTTP: the result document always (the CLI prints it the same way), with a status saying who failed. */
function rehomeAnswer(r: Awaited<ReturnType<MeshController["rehome"]>>): Answer {
  const body = { ...r } as unknown as JsonObject;
  switch (r.kind) {
    case "ok":
      return { body, refs: { node: r.node, store_id: r.store_id, epoch: r.epoch } };
    case "unknown_node":
      return { status: 404, body, error: "unknown_node" };
    case "refused":
      return { status: 409, body, error: `refused_${r.code}` };
    case "unreachable":
    case "indeterminate":
      return { status: 502, body, error: r.kind };
    default: {
      const never: never = r;
      return never;
    }
  }
}

export const operatorHandlers: Handlers = {
  doctor: async (_i, ctx) => ({ body: await doctorDocument(ctx.state.controller, null) }),
  doctorRepair: async (_i, ctx) => {
    const doc = await doctorDocument(ctx.state.controller, {
      operator: apiOperator(ctx.caller, "POST /doctor/repair"),
    });
    return { body: doc, refs: { repaired: doc.wedged.map((w) => w.decision_id) } };
  },
  rehomeNode: async (i, ctx) => {
    const { ref } = i.params as { ref: string };
    const b = i.body as In<typeof OperatorInputs.rehome>;
    return rehomeAnswer(
      await ctx.state.controller.rehome(ref, b.reason, apiOperator(ctx.caller, "POST /nodes/{ref}/rehome")),
    );
  },
  backup: async (i, ctx) => {
    const b = i.body as In<typeof OperatorInputs.backup>;
    const { backupHome, BackupError, postgresStoreRefusal } = await import("../../up/backup.js");
    const engine = ctx.state.controller.store.engine;
    if (b.database === "controller.db" && engine.kind === "postgres")
      throw new ApiError(409, "postgres_store", postgresStoreRefusal("backup", engine.location));
    if (!existsSync(join(ctx.state.dataDir, b.database)))
      throw notFound(
        `${b.database} in the server's home`,
        b.database === "k8s.db"
          ? "it is created by the first Kubernetes deploy"
          : "the controller creates it when it starts",
      );
    // The online backup of the whole home into a private temporary folder, of which the one database asked is sent.
    const dir = mkdtempSync(join(tmpdir(), "berth-backup-"));
    try {
      let copied: Awaited<ReturnType<typeof backupHome>>;
      try {
        copied = await backupHome(ctx.state.dataDir, join(dir, "backup.db"), { force: false });
      } catch (error) {
        if (error instanceof BackupError) throw new ApiError(500, "backup_failed", error.message);
        throw error;
      }
      const one = copied.find((c) => c.database === b.database);
      if (!one) throw notFound(`${b.database} in the server's home`, "it was not there when the backup ran");
      const bytes = readFileSync(one.file);
      return {
        body: {
          database: one.database,
          home: ctx.state.dataDir,
          bytes: bytes.length,
          events: one.events,
          head: one.head,
          sha256: createHash("sha256").update(bytes).digest("hex"),
          base64: bytes.toString("base64"),
        },
        refs: { database: one.database, events: one.events, head_seq: one.head?.seq ?? null },
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
