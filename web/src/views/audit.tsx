/**
 * The audit chain as a live tail (the app follows the stream; this view shows the newest first) and the verify
 * button, which asks the server to verify the whole chain (hashes, signatures, links) and shows its verdict.
 * `#/audit/SEQ` shows one event whole, with links to what its payload names (agent, instance, node, decision).
 */
import { useAction } from "../action";
import { shortId, timeOf } from "../format";
import { AgentLink, DecisionLink, EventLink, InstanceLink } from "../links";
import { useResource } from "../live";
import { NodeCell, useNodeNames } from "../node-names";
import { ErrorNotice, Loaded } from "../notice";
import { href } from "../route";
import type { AuditEvent } from "../types";
import { gist, nodesOf } from "../audit-gist";

export interface AuditTail {
  readonly chains: readonly string[];
  readonly chain: string | null;
  readonly setChain: (chain: string) => void;
  readonly events: readonly AuditEvent[];
  readonly status: string;
  readonly error: unknown;
}

const text = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);

/** The objects an event's payload names, as links (the gate's `agent` is the requesting controller: not linked). */
function EventRefs({ e }: { e: AuditEvent }) {
  const p = e.payload;
  const names = useNodeNames();
  const agent = e.kind === "agent.deploy" ? text(p.agent) : null;
  const instance = text(p.instance_id) ?? (e.kind === "agent.deploy" ? text(p.instance) : null);
  const nodes = nodesOf(e);
  const decision = text(p.decision_id) ?? (e.kind === "workload.place" && p.phase === "decision" ? e.hash : null);
  return (
    <ul class="refs">
      {agent ? (
        <li>
          agent <AgentLink name={agent} />
        </li>
      ) : null}
      {instance ? (
        <li>
          instance <InstanceLink id={instance} />
        </li>
      ) : null}
      {nodes.map((node) => (
        <li key={node}>
          node <NodeCell id={node} names={names} />
        </li>
      ))}
      {decision ? (
        <li>
          decision <DecisionLink id={decision} />
        </li>
      ) : null}
    </ul>
  );
}

function EventDetails({ seq, tail }: { seq: number; tail: AuditTail }) {
  const held = tail.events.find((e) => e.seq === seq);
  // An event older than the tail is read from the events API (the page starting right before it).
  const fetched = useResource(async ({ api }) =>
    held ? { events: [held] } : await api.auditEvents(tail.chain || "controller", seq - 1, 1),
  );
  return (
    <section class="details" aria-label={`audit event #${seq}`}>
      <h3>Audit event #{seq}</h3>
      <a class="close" href={href("audit")}>
        Close details
      </a>
      <Loaded resource={fetched} what={`event #${seq}`}>
        {(data) => {
          const e = data.events.find((x) => x.seq === seq);
          if (!e) return <p role="status">The chain has no event #{seq}.</p>;
          return (
            <>
              <p>
                <strong>{e.kind}</strong> from {e.source} at {timeOf(e.ts)}; hash{" "}
                <code title={e.hash}>{shortId(e.hash, 16)}</code>, after{" "}
                <code title={e.prev_hash}>{shortId(e.prev_hash, 16)}</code>
                {seq > 0 ? (
                  <>
                    {" "}
                    (<EventLink seq={seq - 1} />)
                  </>
                ) : null}
                .
              </p>
              <EventRefs e={e} />
              <pre>{JSON.stringify(e.payload, null, 2)}</pre>
            </>
          );
        }}
      </Loaded>
    </section>
  );
}

export function AuditView({ tail, selected }: { tail: AuditTail; selected: string | null }) {
  const verify = useAction(({ api }) => api.verify(tail.chain ?? ""));
  const newestFirst = [...tail.events].reverse();
  const seq = selected !== null && /^\d+$/.test(selected) ? Number(selected) : null;
  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit chain</h2>
      {seq !== null ? <EventDetails key={seq} seq={seq} tail={tail} /> : null}
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
        <EventList events={newestFirst} />
      </div>
    </section>
  );
}

/** Events newest first, each seq a link to the event. The overview shows the first few of the same list. */
export function EventList({ events }: { events: readonly AuditEvent[] }) {
  return (
    <ol class="audit-tail">
      {events.map((e) => (
        <li key={`${e.chain_id}-${e.seq}`}>
          <EventLink seq={e.seq} /> <time>{timeOf(e.ts)}</time> <span class="source">{e.source}</span>{" "}
          <strong class="kind">{e.kind}</strong> <span class="gist">{gist(e)}</span>
        </li>
      ))}
    </ol>
  );
}
