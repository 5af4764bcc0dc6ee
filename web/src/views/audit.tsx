/**
 * The audit chain as a live tail (the app follows the stream; this view shows the newest first) and the verify
 * button, which asks the server to verify the whole chain (hashes, signatures, links) and shows its verdict.
 */
import { useAction } from "../action";
import { shortId, timeOf } from "../format";
import { ErrorNotice } from "../notice";
import type { AuditEvent } from "../types";

export interface AuditTail {
  readonly chains: readonly string[];
  readonly chain: string | null;
  readonly setChain: (chain: string) => void;
  readonly events: readonly AuditEvent[];
  readonly status: string;
  readonly error: unknown;
}

/** What an event is about, in a few words: the payload's name, instance, decision phase or outcome. */
function gist(e: AuditEvent): string {
  const p = e.payload;
  return ["name", "phase", "instance_id", "outcome", "node_id", "agent"]
    .filter((k) => typeof p[k] === "string" || typeof p[k] === "number")
    .map((k) => `${k}=${String(p[k])}`)
    .join(" ");
}

export function AuditView({ tail }: { tail: AuditTail }) {
  const verify = useAction(({ api }) => api.verify(tail.chain ?? ""));
  const newestFirst = [...tail.events].reverse();
  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit chain</h2>
      <div class="table-tools">
        {tail.chains.length > 1 ? (
          <label>
            Chain{" "}
            <select value={tail.chain ?? ""} onChange={(e) => tail.setChain(e.currentTarget.value)}>
              {tail.chains.map((c) => (
                <option key={c}>{c}</option>
              ))}
            </select>
          </label>
        ) : (
          <span>Chain {tail.chain ?? "(default)"}</span>
        )}
        <span role="status" aria-label="audit stream">
          stream: {tail.status}
        </span>
        <button type="button" disabled={verify.busy} onClick={verify.run}>
          Verify chain
        </button>
      </div>
      {verify.result ? (
        <output class={verify.result.ok ? "verified" : "broken"} aria-label="verify result">
          {verify.result.ok
            ? `Verified: ${verify.result.events} events, head ${verify.result.head ? `#${verify.result.head.seq} ${shortId(verify.result.head.hash, 12)}` : "none"}.`
            : `NOT verified at event #${verify.result.failure?.seq ?? "?"}: ${verify.result.failure?.code ?? ""} ${verify.result.failure?.detail ?? ""}`}
        </output>
      ) : null}
      <ErrorNotice error={verify.error} action="Verifying" />
      <ErrorNotice error={tail.error} action="Following the audit stream" />
      <div role="log" aria-label="audit events" aria-live="polite">
        <ol class="audit-tail">
        {newestFirst.map((e) => (
          <li key={`${e.chain_id}-${e.seq}`}>
            <span class="seq">#{e.seq}</span> <time>{timeOf(e.ts)}</time> <span class="source">{e.source}</span> <strong class="kind">{e.kind}</strong>{" "}
            <span class="gist">{gist(e)}</span>
          </li>
        ))}
        </ol>
      </div>
    </section>
  );
}
