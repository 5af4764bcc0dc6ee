/**
 * The restart policy (issue 15, spec/mesh.md §15): what a node does when an instance it was asked to keep running
 * ends or stops answering its health check. One vocabulary for both targets: the agent spec's `spec.restart`, the
 * place order's `restart` and the node's place body carry the same three words.
 *
 * - `never`: an exit is final (the default for `berth place`, which is how berth behaved before supervision);
 * - `on-failure`: restarted after a non-zero exit, a signal, or `misses` failed health checks; a clean exit is final;
 * - `always`: restarted after any exit of a `service` instance (the default for `berth deploy` of an agent, which is
 *   meant to be long-lived).
 */
import { z } from "zod";

export const RESTART_POLICIES = ["never", "on-failure", "always"] as const;
export type RestartPolicy = (typeof RESTART_POLICIES)[number];

export const RestartPolicySchema = z.enum(RESTART_POLICIES, { error: 'must be "never", "on-failure" or "always"' });

/** `berth place` keeps today's behaviour unless asked; `berth deploy` of an agent keeps it alive. */
export const PLACE_RESTART_DEFAULT: RestartPolicy = "never";
export const AGENT_RESTART_DEFAULT: RestartPolicy = "always";
