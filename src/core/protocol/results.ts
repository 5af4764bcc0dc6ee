/**
 * The node's answers, one schema per method (spec/mesh.md §11; issue 14 item 3): the controller's node client
 * parses every `ok` result once against its method's schema, so no caller reads a result by guessing its shape and a
 * malformed answer is *no valid answer*, naming the field. Objects are loose (a newer node may add members; the
 * ones listed here are required and typed): the request side stays strict (messages.ts), the answer side tolerant of
 * additions, never of a missing or mistyped member.
 */
import { ok, type Result } from "../../kit/result.js";
import { z } from "zod";
import type { JsonObject } from "../crypto/canonical.js";
import { describeIssues, type Method, SignedMessageSchema } from "./messages.js";

const nullableString = z.string().nullable();

export const InflightStatusRowSchema = z.looseObject({
  decision_id: z.string(),
  in_flight: z.literal(true),
  method: z.string(),
  since_ms: z.number(),
});
export const InstanceStatusRowSchema = z.looseObject({
  instance_id: z.string(),
  decision_id: z.string(),
  name: z.string(),
  package_id: z.string(),
  variant: z.string(),
  route: z.enum(["native", "emulated"]),
  state: z.string(),
  exit_code: z.number().nullable(),
  signal: nullableString,
  detail: nullableString,
  pid: z.number().nullable(),
  started_ms: z.number().nullable(),
  requester: z.string(),
  agent: nullableString,
  intent: nullableString,
  generation: z.number().int(),
  /** Issue 15; absent from an older node's rows. */
  restart_policy: z.string().optional(),
  restarts: z.number().int().optional(),
  /** Issue 36 (`berth top`): a running instance's CPU time and memory as its node read them; absent from older nodes. */
  usage: z
    .looseObject({ cpu_usec: z.number(), memory_bytes: z.number(), sampled_ms: z.number() })
    .optional()
    .catch(undefined),
});
export const DepartedStatusRowSchema = z.looseObject({
  instance_id: z.string(),
  decision_id: z.string(),
  departed: z.string(),
  at_ms: z.number(),
});
/** A status row: in-flight mark, held instance, or departed instance (§11.2). Departed first: it has no `state`. */
export const StatusRowSchema = z.union([InflightStatusRowSchema, DepartedStatusRowSchema, InstanceStatusRowSchema]);

export const RESULT_SCHEMAS = {
  describe: z.looseObject({
    node_id: z.string(),
    boot_id: z.string(),
    version: z.string(),
    methods: z.array(z.string()),
    facts: SignedMessageSchema,
    clock_ms: z.number(),
  }),
  place: z.looseObject({
    instance_id: z.string(),
    name: z.string(),
    variant: z.string(),
    route: z.enum(["native", "emulated"]),
    package_id: z.string(),
    state: z.string(),
  }),
  load: z.looseObject({
    instance_id: z.string(),
    name: z.string(),
    variant: z.string(),
    route: z.enum(["native", "emulated"]),
    package_id: z.string(),
    state: z.string(),
  }),
  start: z.looseObject({ started: z.boolean(), already: z.boolean() }),
  stop: z.looseObject({
    stopped: z.boolean(),
    already: z.boolean(),
    exit_code: z.number().nullable(),
    signal: nullableString,
  }),
  unload: z.looseObject({ unloaded: z.boolean() }),
  status: z.union([z.looseObject({ row: InstanceStatusRowSchema }), z.looseObject({ rows: z.array(StatusRowSchema) })]),
  logs: z.looseObject({ stdout: z.string(), stderr: z.string() }),
  rehome: z.looseObject({
    store_id: z.string(),
    epoch: z.number().int(),
    from_store: nullableString,
    from_epoch: z.number().int().nullable(),
    instances: z.number().int(),
  }),
  /** Issue 33: the generation of this controller's list the node now holds, and whether this push changed it. */
  revocations: z.looseObject({ generation: z.number().int(), changed: z.boolean() }),
} as const satisfies Record<Method, z.ZodType>;

export type ResultOf<M extends Method> = z.infer<(typeof RESULT_SCHEMAS)[M]>;
export type StatusRowAnswer = z.infer<typeof StatusRowSchema>;

/** Parses one `ok` result for its method; an unknown method's result is passed through (the node refuses those). */
export function parseResult(method: string, result: JsonObject): Result<void> {
  const schema = (RESULT_SCHEMAS as Record<string, z.ZodType | undefined>)[method];
  if (schema === undefined) return ok();
  const parsed = schema.safeParse(result);
  return parsed.success
    ? { ok: true, value: undefined }
    : { ok: false, error: describeIssues(`${method} result`, parsed.error.issues) };
}

export type InstanceStatusRowAnswer = z.infer<typeof InstanceStatusRowSchema>;

/** A held instance's row (not an in-flight mark, not a departed instance). */
export function isInstanceRow(row: StatusRowAnswer): row is InstanceStatusRowAnswer {
  return !("departed" in row) && row.in_flight !== true && typeof row.state === "string";
}

/** The rows of a status answer the node client has typed (mesh/client/node-client.ts `AnswerOf`): one row or many. */
export function statusRowsOf(result: ResultOf<"status">): readonly StatusRowAnswer[] {
  // Loose objects: `in` does not narrow past their index signature, so the union's two members are named here.
  return "rows" in result ? (result.rows as readonly StatusRowAnswer[]) : [result.row as InstanceStatusRowAnswer];
}

/**
 * The rows of a status result nobody has typed yet (a JSON object from elsewhere than the node client), or null when it
 * is not a table of rows. The node client's answers are typed already: read them with `statusRowsOf`.
 */
export function statusRows(result: JsonObject): readonly StatusRowAnswer[] | null {
  const parsed = RESULT_SCHEMAS.status.safeParse(result);
  if (!parsed.success) return null;
  return "rows" in parsed.data
    ? (parsed.data.rows as readonly StatusRowAnswer[])
    : [parsed.data.row as StatusRowAnswer];
}
