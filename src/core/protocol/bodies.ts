/**
 * Method bodies (spec/mesh.md §9.1, §11): what each control method carries and returns. Shared by the node (which
 * validates with these) and the controller (which builds with the same types).
 */
import type { Result } from "../../kit/result.js";
import { z } from "zod";
import { RevocationListSchema } from "../governance/policy.js";
import { PLACE_RESTART_DEFAULT, RestartPolicySchema } from "../node/restart-policy.js";
import { describeIssues, HEX64, LIMITS } from "./messages.js";

export const NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const INSTANCE_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}-[0-9a-f]{12}$/;

const instanceId = z.string().regex(INSTANCE_ID_PATTERN, "instance_id must be <name>-<12 hex>");

export const RunConfigSchema = z.strictObject({
  mode: z.enum(["service", "once"]).default("service"),
  args: z.array(z.string().max(4096)).max(64).default([]),
  env: z
    .record(
      z
        .string()
        .regex(/^[A-Z_][A-Z0-9_]*$/, "env names must match ^[A-Z_][A-Z0-9_]*$")
        .refine((k) => !k.startsWith("BERTH_"), "env names must not start with BERTH_"),
      z.string().refine((v) => Buffer.byteLength(v, "utf8") <= 4096, "env values are at most 4 KiB"),
    )
    .refine((env) => Object.keys(env).length <= 64, "at most 64 env entries")
    .default({}),
});
export type RunConfig = z.infer<typeof RunConfigSchema>;

export const PlaceBodySchema = z.strictObject({
  package_id: z.string().regex(HEX64, "package_id must be 64 lowercase hex"),
  name: z.string().regex(NAME_PATTERN, "name must match ^[a-z0-9][a-z0-9-]{0,62}$"),
  variant: z.string().min(1).max(64),
  config: RunConfigSchema,
  /** berth extension for agent placement (issue 7): the agent identity and create-intent fingerprint. */
  agent: z.string().max(128).nullable().optional(),
  intent: z.string().regex(HEX64, "intent must be 64 lowercase hex").nullable().optional(),
  /** Issue 15: how the node supervises the instance (spec/mesh.md §15); absent is `never`, today's behaviour. */
  restart: RestartPolicySchema.default(PLACE_RESTART_DEFAULT),
});
export type PlaceBody = z.input<typeof PlaceBodySchema>;

export const BODY_SCHEMAS = {
  describe: z.strictObject({}),
  place: PlaceBodySchema,
  load: PlaceBodySchema,
  start: z.strictObject({ instance_id: instanceId }),
  stop: z.strictObject({
    instance_id: instanceId,
    grace_ms: z.number().int().min(0).max(LIMITS.graceMaxMs).default(LIMITS.graceDefaultMs),
  }),
  /** `generation` (issue 7): unload only if the instance is still at this generation (the agent deploy's fence). */
  unload: z.strictObject({
    instance_id: instanceId,
    generation: z.number().int().min(0).optional(),
    /** Issue 15: also remove the instance name's workspace (its $HOME, kept across restarts and redeploys). */
    purge: z.boolean().optional(),
  }),
  status: z.strictObject({
    instance_id: instanceId.nullable().default(null),
    include_departed: z.boolean().default(false),
  }),
  logs: z.strictObject({
    instance_id: instanceId,
    tail_bytes: z.number().int().min(0).max(LIMITS.logTailBytes).default(LIMITS.logTailBytes),
  }),
  /** Issue 20: the operator's reason for moving this node to the requesting store (`berth node rehome`). */
  rehome: z.strictObject({
    reason: z
      .string()
      .min(1, "reason must say why the node moves")
      .refine((r) => Buffer.byteLength(r, "utf8") <= LIMITS.reasonBytes, "reason is at most 1024 bytes"),
  }),
  /**
   * Issue 33: the controller's revocation list, pushed whole (`berth revoke`/`unrevoke`, and at every contact with a
   * node behind it). `generation` is its sequence: a node never takes a list older than the one it holds from that
   * controller. Signed as every request is, by the controller's key; the decision id is the chained publication.
   */
  revocations: RevocationListSchema,
} as const;

export type BodyOf<M extends keyof typeof BODY_SCHEMAS> = z.infer<(typeof BODY_SCHEMAS)[M]>;

export function parseBody<M extends keyof typeof BODY_SCHEMAS>(method: M, body: unknown): Result<BodyOf<M>> {
  const parsed = BODY_SCHEMAS[method].safeParse(body);
  return parsed.success
    ? { ok: true, value: parsed.data as BodyOf<M> }
    : { ok: false, error: describeIssues("body", parsed.error.issues) };
}

/** §11.2 rows, as the node answers them. */
export interface InflightStatusRow {
  decision_id: string;
  in_flight: true;
  method: string;
  since_ms: number;
}
export interface InstanceStatusRow {
  instance_id: string;
  decision_id: string;
  name: string;
  package_id: string;
  variant: string;
  route: "native" | "emulated";
  state: string;
  exit_code: number | null;
  signal: string | null;
  detail: string | null;
  pid: number | null;
  started_ms: number | null;
  requester: string;
  agent: string | null;
  intent: string | null;
  generation: number;
  /** Issue 15: the placement's restart policy and the restarts since the operator last started it. */
  restart_policy: string;
  restarts: number;
}
export interface DepartedStatusRow {
  instance_id: string;
  decision_id: string;
  departed: string;
  at_ms: number;
}
export type StatusRow = InflightStatusRow | InstanceStatusRow | DepartedStatusRow;
