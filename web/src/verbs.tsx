/**
 * What the instance and agent verbs share: a button that runs one API call and says how it ended, and the logs an
 * instance or agent answered with.
 */
import { useAction } from "./action";
import { ConfirmButton } from "./confirm";
import type { Live } from "./live";
import { ErrorNotice } from "./notice";

/**
 * An outcome in a few words. Instance verbs answer a VerbResult (`kind` ok, refused, unreachable… with why); agent
 * verbs answer `ok` with a `message` (stop) or a deploy outcome (replace).
 */
export function outcomeText(result: unknown): string {
  if (typeof result !== "object" || result === null) return String(result);
  const r = result as {
    kind?: string;
    reason?: string;
    code?: string;
    ok?: boolean;
    outcome?: string;
    message?: string;
  };
  if (r.kind !== undefined)
    return r.kind === "ok" ? "ok" : `${r.kind}${r.code ? ` (${r.code})` : ""}: ${r.reason ?? ""}`;
  if (r.ok !== undefined) return [r.ok ? "ok" : "not done", r.outcome, r.message].filter(Boolean).join(": ");
  return "done";
}

/** `confirm`: the question a destructive verb asks before it runs (confirm.tsx); without it the button runs at once. */
export function VerbButton({
  label,
  verb,
  perform,
  confirm,
}: {
  label: string;
  verb: string;
  perform: (live: Live) => Promise<unknown>;
  confirm?: string;
}) {
  const action = useAction(perform);
  return (
    <span class="verb">
      {confirm ? (
        <ConfirmButton label={label} question={confirm} disabled={action.busy} onConfirm={() => void action.run()} />
      ) : (
        <button type="button" disabled={action.busy} onClick={action.run}>
          {label}
        </button>
      )}
      {action.result !== null ? <output>{`${verb}: ${outcomeText(action.result)}`}</output> : null}
      <ErrorNotice error={action.error} action={label} />
    </span>
  );
}

/** Captured stdout and stderr tails, from a logs answer (or the `result` member of an instance verb result). */
export function LogText({ logs }: { logs: unknown }) {
  const body = (
    typeof logs === "object" && logs !== null && "result" in logs ? (logs as { result: unknown }).result : logs
  ) as Record<string, unknown> | null;
  if (body && typeof body.stdout === "string") {
    return (
      <>
        <h4>stdout{body.truncated_stdout ? " (tail)" : ""}</h4>
        <pre>{body.stdout || "(empty)"}</pre>
        <h4>stderr{body.truncated_stderr ? " (tail)" : ""}</h4>
        <pre>{typeof body.stderr === "string" && body.stderr ? body.stderr : "(empty)"}</pre>
      </>
    );
  }
  return <pre>{JSON.stringify(logs, null, 2)}</pre>;
}
