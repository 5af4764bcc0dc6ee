/**
 * The order a reschedule reruns (issue 16, spec/mesh.md §15 "Rescheduling reruns place() with the stored order"):
 * kept per decision in the store (move-records.ts `mesh_orders`), never in the chain, which keeps env names only.
 *
 * - `storedOrderOf`: the validated order with every value that came from a `valueFrom` replaced by its reference
 *   (`env_from`); inline values stay (the operator wrote them into the order or spec).
 * - `rebuildOrder`: the order again, each reference re-read now (a file, or a variable of this process: `berth
 *   serve`'s when the loop reschedules), with the node being left added to `avoid` and no pin
 *   (core/mesh/reschedule.ts `rescheduleOrder`). Errors name the env entry and its file or variable, never a value.
 */
import { rescheduleOrder } from "../../core/mesh/reschedule.js";
import { err, ok, type Result } from "../../kit/result.js";
import { readValueFrom } from "../../kit/value-from.js";
import type { AgentSpecSource, EnvRef, StoredOrder } from "./move-records.js";
import type { PlaceOrder, PlaceOrderInput } from "./order.js";

/** An `env_from` name without a `config.env` entry: the order is refused (field named), nothing decided. */
export function envFromProblem(order: Pick<PlaceOrder, "config" | "env_from">): string | null {
  for (const name of Object.keys(order.env_from)) {
    if (!Object.hasOwn(order.config.env, name))
      return `place order: field env_from.${name}: names no config.env entry ${name}`;
  }
  return null;
}

export function storedOrderOf(
  order: PlaceOrder,
  packageId: string,
  name: string,
  agentSpec: AgentSpecSource | null = null,
): StoredOrder {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(order.config.env)) if (!Object.hasOwn(order.env_from, k)) env[k] = v;
  return {
    package_id: packageId,
    name,
    config: { mode: order.config.mode, args: [...order.config.args], env },
    env_from: { ...order.env_from },
    pin: order.pin,
    prefer: [...order.prefer],
    avoid: [...order.avoid],
    allow_emulated: order.allow_emulated,
    strategy: order.strategy,
    restart: order.restart,
    start: order.start,
    agent: order.agent,
    intent: order.intent,
    ...(agentSpec !== null && order.agent !== null ? { agent_spec: { ...agentSpec } } : {}),
  };
}

/** A reference's value now, or why it cannot be read (naming the variable or file, never a value). */
export type RefReader = (ref: EnvRef) => Result<string>;

/** Reads one reference with the deploy's reader (kit/value-from.ts), so a reschedule refuses what a deploy refuses. */
export function readRef(processEnv: NodeJS.ProcessEnv): RefReader {
  return (ref) => {
    const read = readValueFrom(ref, processEnv);
    if (read.ok) return ok(read.value);
    return err(read.error.cause === "unset" ? `${read.error.message} in this process` : read.error.message);
  };
}

/**
 * The order to rerun: the stored one, references read, `leaving` (the node the agent leaves, null for a lost
 * instance whose node may take it again) in `avoid`, never pinned.
 */
export function rebuildOrder(stored: StoredOrder, leaving: string | null, read: RefReader): Result<PlaceOrderInput> {
  const env: Record<string, string> = { ...stored.config.env };
  for (const [name, ref] of Object.entries(stored.env_from)) {
    const r = read(ref);
    if (!r.ok) return err(`the stored order's env ${name} (valueFrom): ${r.error}`);
    env[name] = r.value;
  }
  const moved =
    leaving === null
      ? { pin: null, avoid: [...stored.avoid], dry_run: false }
      : rescheduleOrder({ pin: stored.pin, avoid: stored.avoid, dry_run: false }, leaving);
  return ok({
    package: stored.package_id,
    name: stored.name,
    config: { mode: stored.config.mode, args: [...stored.config.args], env },
    env_from: { ...stored.env_from },
    pin: moved.pin,
    prefer: [...stored.prefer].filter((n) => n !== leaving),
    avoid: [...moved.avoid],
    allow_emulated: stored.allow_emulated,
    strategy: stored.strategy as PlaceOrderInput["strategy"],
    restart: stored.restart as PlaceOrderInput["restart"],
    start: stored.start,
    agent: stored.agent,
    intent: stored.intent,
    dry_run: false,
  });
}
