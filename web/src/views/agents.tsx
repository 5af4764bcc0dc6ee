/**
 * Agents (the one deploy model over both targets): each with its target, its state there and what a deploy would do
 * next. `#/agents/NAME` shows one: its verbs (stop; start, issue 33; replace, a fresh instance now; delete, behind a
 * confirmation), its logs (followed live), and its
 * timeline from the audit chain (deploys, placements, verbs, exits, replaces), each entry linking to what it names.
 */
import { useMemo, useState } from "preact/hooks";
import { useAction } from "../action";
import { useTail } from "../audit-tail";
import { useChainHistory } from "../chain-history";
import { FollowedLogs } from "../follow-logs";
import { timeOf } from "../format";
import { AgentLink, DecisionLink, EventLink, InstanceLink } from "../links";
import { useLive, useResource } from "../live";
import { NodeCell, useNodeNames } from "../node-names";
import { ErrorNotice, Loaded, Loading } from "../notice";
import { href, navigate } from "../route";
import { type Column, FilteredTable } from "../table";
import { timelineOf } from "../timeline";
import type { AgentState } from "../types";
import { outcomeText, VerbButton } from "../verbs";

const searchText = (a: AgentState) => [a.name, a.target, a.state, a.instance ?? ""].join(" ");

export function stateClass(state: string): string {
  return `state ${state.replace(/\s+/g, "-")}`;
}

function AgentTimeline({ agent }: { agent: string }) {
  const { api } = useLive();
  const tail = useTail();
  const names = useNodeNames();
  const history = useChainHistory(api, tail.chain, tail.events);
  const entries = useMemo(() => timelineOf(agent, history.events).reverse(), [agent, history.events]);
  return (
    <section aria-label={`timeline of ${agent}`}>
      <h4>Timeline</h4>
      <ErrorNotice error={history.error} action="Reading the chain" />
      {history.loading ? <Loading what="the chain" /> : null}
      {!history.loading && entries.length === 0 ? <p class="empty">Nothing in the chain names {agent}.</p> : null}
      {history.from > 0 ? <p class="hint">From event #{history.from}: older events were not read.</p> : null}
      <ol class="timeline">
        {entries.map((e) => (
          <li key={e.seq} class={`timeline-${e.kind.replace(/\s+/g, "-")}`}>
            <EventLink seq={e.seq} /> <time>{timeOf(e.ts)}</time> <strong>{e.kind}</strong> {e.text}
            {e.instanceId ? (
              <>
                {" "}
                · instance <InstanceLink id={e.instanceId} short />
              </>
            ) : null}
            {e.nodeId ? (
              <>
                {" "}
                · node <NodeCell id={e.nodeId} names={names} />
              </>
            ) : null}
            {e.decisionId ? (
              <>
                {" "}
                · decision <DecisionLink id={e.decisionId} />
              </>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  );
}

function AgentDetails({ agent }: { agent: AgentState }) {
  return (
    <section class="details" aria-label={`agent ${agent.name}`}>
      <h3>
        Agent {agent.name} on {agent.target}
      </h3>
      <a class="close" href={href("agents")}>
        Close details
      </a>
      <p>
        State <strong>{agent.state}</strong>
        {agent.instance ? (
          <>
            , instance <InstanceLink id={agent.instance} />
          </>
        ) : null}
        {agent.lifecycle ? `; on its node: ${agent.lifecycle}` : ""}
        {typeof agent.restarts === "number"
          ? `, restarted ${agent.restarts} time${agent.restarts === 1 ? "" : "s"} by its node`
          : ""}
        {agent.next ? `; a deploy now would: ${agent.next}` : ""}.
      </p>
      {agent.error ? <p class="error">{agent.error}</p> : null}
      <fieldset class="verbs">
        <legend>Agent verbs</legend>
        <VerbButton
          verb="stop"
          label="Stop agent"
          confirm={`Stop ${agent.name}? Its instance ends until the next deploy or start.`}
          perform={({ api }) => api.agentVerb(agent.name, "stop")}
        />
        <VerbButton verb="start" label="Start agent" perform={({ api }) => api.agentVerb(agent.name, "start")} />
        <VerbButton verb="replace" label="Replace agent" perform={({ api }) => api.agentVerb(agent.name, "replace")} />
        <DeleteAgent name={agent.name} />
      </fieldset>
      <FollowedLogs buttonLabel="Show agent logs" load={(api) => api.agentLogs(agent.name)} />
      <AgentTimeline agent={agent.name} />
    </section>
  );
}

/**
 * Issue 33: `berth agent delete NAME` from the dashboard, behind a confirmation: the first button only asks; the
 * server refuses (ok false, with the reason and what clears it) while an instance of the agent is there.
 */
function DeleteAgent({ name }: { name: string }) {
  const [asking, setAsking] = useState(false);
  const action = useAction(({ api }) => api.deleteAgent(name));
  if (!asking) {
    return (
      <span class="verb">
        <button type="button" onClick={() => setAsking(true)}>
          Delete agent
        </button>
        {action.result !== null ? <output>{`delete: ${outcomeText(action.result)}`}</output> : null}
        <ErrorNotice error={action.error} action="Delete agent" />
      </span>
    );
  }
  return (
    <fieldset class="verb" aria-label={`confirm deleting agent ${name}`}>
      <legend>{`Delete agent ${name}? Its record goes (the audit chain keeps it); refused while an instance of it is there.`}</legend>
      <button
        type="button"
        disabled={action.busy}
        onClick={async () => {
          setAsking(false);
          await action.run();
        }}
      >
        Confirm delete
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </fieldset>
  );
}

const columns: Column<AgentState>[] = [
  { header: "name", cell: (a) => <AgentLink name={a.name} /> },
  { header: "target", cell: (a) => a.target },
  { header: "state", cell: (a) => <span class={stateClass(a.state)}>{a.state}</span> },
  { header: "lifecycle", cell: (a) => (a.lifecycle ? <span class={stateClass(a.lifecycle)}>{a.lifecycle}</span> : "") },
  { header: "restarts", cell: (a) => (typeof a.restarts === "number" ? String(a.restarts) : "") },
  { header: "instance", cell: (a) => <InstanceLink id={a.instance} /> },
  { header: "next", cell: (a) => a.next ?? "" },
  { header: "error", cell: (a) => a.error ?? "" },
  {
    header: "",
    cell: (a) => (
      <button type="button" aria-label={`Details of agent ${a.name}`} onClick={() => navigate("agents", a.name)}>
        Details
      </button>
    ),
  },
];

export function AgentsView({ selected }: { selected: string | null }) {
  // An agent's state comes from its node's signed status: wait for the first describe (node-directory.ts).
  const agents = useResource(async ({ api, nodes }) => {
    await nodes.described;
    return api.agents();
  });
  const chosen = agents.data?.agents.find((a) => a.name === selected);
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents</h2>
      {chosen ? <AgentDetails key={chosen.name} agent={chosen} /> : null}
      {selected !== null && !chosen && agents.data ? (
        <p role="status">No agent {selected} is deployed from this berth home.</p>
      ) : null}
      <Loaded resource={agents} what="agents">
        {(data) => (
          <FilteredTable
            label="agents"
            rows={data.agents}
            columns={columns}
            rowKey={(a) => `${a.target}/${a.name}`}
            searchText={searchText}
            empty="No agent deployed: deploy one from Deploy an agent."
          />
        )}
      </Loaded>
    </section>
  );
}
