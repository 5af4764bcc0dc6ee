/**
 * The place order (spec/mesh.md §9.1): what an operator or the API asks for. Validation is step 1 of `place()`; a bad
 * order is an error, never chained, because nothing was decided yet.
 */
import { isAbsolute } from "node:path";
import { z } from "zod";
import { PLACE_RESTART_DEFAULT, RestartPolicySchema } from "../../core/node/restart-policy.js";
import { PLACEMENT_STRATEGIES } from "../../core/placement/inputs.js";
import { NAME_PATTERN, RunConfigSchema } from "../../core/protocol/bodies.js";
import { HEX64 } from "../../core/protocol/messages.js";

const nodeRef = z.string().regex(/^[0-9a-f]{32}$/, "a node id is 32 lowercase hex characters");

export const PlaceOrderSchema = z.strictObject({
  /** A package directory, or the package id of a package already in the controller's package store. */
  package: z.string().min(1),
  /** Default: the statement's name. */
  name: z.string().regex(NAME_PATTERN, "name must match ^[a-z0-9][a-z0-9-]{0,62}$").nullable().default(null),
  config: RunConfigSchema.prefault({}),
  pin: nodeRef.nullable().default(null),
  prefer: z.array(nodeRef).max(16).default([]),
  avoid: z.array(nodeRef).max(16).default([]),
  allow_emulated: z.boolean().default(false),
  /** Issue 16: where the engine's load dimension leans (core/placement/inputs.ts). */
  strategy: z.enum(PLACEMENT_STRATEGIES).default("spread"),
  /** Issue 15: what the node does when the instance ends (spec/mesh.md §15); `berth deploy` of an agent asks `always`. */
  restart: RestartPolicySchema.default(PLACE_RESTART_DEFAULT),
  /** true sends `place` (load and start); false sends `load`. */
  start: z.boolean().default(true),
  /** Issue 7: the agent this instance is placed for and its create-intent fingerprint; the node records both. */
  agent: z.string().regex(NAME_PATTERN, "agent must match ^[a-z0-9][a-z0-9-]{0,62}$").nullable().default(null),
  intent: z.string().regex(HEX64, "intent must be 64 lowercase hex").nullable().default(null),
  dry_run: z.boolean().default(false),
  /**
   * Issue 16: which `config.env` values were read from a `valueFrom` (a file, or a variable of the deploying
   * process), so a reschedule re-reads them instead of the controller keeping the value (stored-order.ts). Given by
   * the agents layer; never chained, never sent to a node.
   */
  env_from: z
    .record(
      z.string().regex(/^[A-Z_][A-Z0-9_]*$/, "env names must match ^[A-Z_][A-Z0-9_]*$"),
      z.union([
        z.strictObject({
          file: z.string().min(1).max(4096).refine(isAbsolute, "a valueFrom file is an absolute path here"),
        }),
        z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name") }),
      ]),
    )
    .default({}),
});
export type PlaceOrder = z.infer<typeof PlaceOrderSchema>;
export type PlaceOrderInput = z.input<typeof PlaceOrderSchema>;

export function isPackageId(value: string): boolean {
  return HEX64.test(value);
}
