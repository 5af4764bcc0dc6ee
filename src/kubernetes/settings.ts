/**
 * berth's own Kubernetes settings (spec/kubernetes.md §15.3), from the environment — never from `provider_config`.
 * A value out of range is refused with the variable's name rather than silently clamped.
 */
import type { Result } from "../kit/result.js";
import { z } from "zod";
import type { WaitSettings } from "./waiter.js";

export const PROVIDER_ANSWER_BY_SECONDS = 590;
export const LOOP_RESERVE_SECONDS = 5;

export interface K8sSettings {
  /** D: 30–600 s. More would break the shared 1200 s orphan gate (P-22). */
  readonly deadlineSeconds: number;
  readonly wait: WaitSettings;
}

const Env = z.object({
  BERTH_K8S_DEADLINE_SECONDS: z.coerce.number().int().min(30).max(600).default(600),
  BERTH_K8S_WATCH: z.enum(["true", "false", "1", "0"]).default("true"),
  BERTH_K8S_WATCH_RESYNC_SECONDS: z.coerce.number().int().min(2).max(30).default(10),
  // Issue 34: how long a container the deploy saw start must stay running before it answers success. Not below 1 s:
  // the kubelet reports an exit only at its next relist (every second).
  BERTH_K8S_START_CONFIRM_SECONDS: z.coerce.number().int().min(1).max(60).default(3),
});

export type SettingsResult = Result<K8sSettings>;

export function settingsFromEnv(env: NodeJS.ProcessEnv): SettingsResult {
  const picked = Object.fromEntries(
    [
      "BERTH_K8S_DEADLINE_SECONDS",
      "BERTH_K8S_WATCH",
      "BERTH_K8S_WATCH_RESYNC_SECONDS",
      "BERTH_K8S_START_CONFIRM_SECONDS",
    ]
      .filter((k) => env[k] !== undefined && env[k] !== "")
      .map((k) => [k, env[k]]),
  );
  const parsed = Env.safeParse(picked);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: `setting ${issue?.path.join(".") ?? "?"}: ${issue?.message ?? "invalid"}` };
  }
  return {
    ok: true,
    value: {
      deadlineSeconds: parsed.data.BERTH_K8S_DEADLINE_SECONDS,
      wait: {
        watch: parsed.data.BERTH_K8S_WATCH === "true" || parsed.data.BERTH_K8S_WATCH === "1",
        resyncMs: parsed.data.BERTH_K8S_WATCH_RESYNC_SECONDS * 1000,
        pollMs: 2000,
        confirmStartMs: parsed.data.BERTH_K8S_START_CONFIRM_SECONDS * 1000,
      },
    },
  };
}
