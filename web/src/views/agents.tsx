/**
 * Agents (the one deploy model over both targets): each with its target, its state there and what a deploy would do
 * next; choosing one offers its logs, stop (a later deploy starts it again) and replace (a fresh instance now).
 */
import { useMemo, useState } from "preact/hooks";
import { useAction } from "../action";
import { useResource } from "../live";
import { ErrorNotice, Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { AgentState } from "../types";
import { LogText, VerbButton } from "../verbs";

const searchText = (a: AgentState) => [a.name, a.target, a.state, a.instance ?? ""].join(" ");

function AgentDetails({ agent, onClose }: { agent: AgentState; onClose: () => void }) {
  const logs = useAction(({ api }) => api.agentLogs(agent.name));
  return (
    <section class="details" aria-label={`agent ${agent.name}`}>
      <h3>
        Agent {agent.name} on {agent.target}
      </h3>
      <button type="button" class="close" onClick={onClose}>
        Close details
      </button>
      <p>
        State <strong>{agent.state}</strong>
        {agent.instance ? (
          <>
            , instance <code>{agent.instance}</code>
          </>
        ) : null}
        {agent.next ? `; a deploy now would: ${agent.next}` : ""}.
      </p>
      <fieldset class="verbs">
        <legend>Agent verbs</legend>
        <VerbButton verb="stop" label="Stop agent" perform={({ api }) => api.agentVerb(agent.name, "stop")} />
        <VerbButton verb="replace" label="Replace agent" perform={({ api }) => api.agentVerb(agent.name, "replace")} />
        <button type="button" disabled={logs.busy} onClick={logs.run}>
          Show agent logs
        </button>
      </fieldset>
      <ErrorNotice error={logs.error} action="Reading the logs" />
      {logs.result !== null ? <LogText logs={logs.result} /> : null}
    </section>
  );
}

export function AgentsView() {
  const agents = useResource(({ api }) => api.agents());
  const [selected, setSelected] = useState<string | null>(null);
  const columns = useMemo<Column<AgentState>[]>(
    () => [
      { header: "name", cell: (a) => a.name },
      { header: "target", cell: (a) => a.target },
      { header: "state", cell: (a) => <span class={`state ${a.state.replace(/\s+/g, "-")}`}>{a.state}</span> },
      { header: "instance", cell: (a) => (a.instance ? <code>{a.instance}</code> : "—") },
      { header: "next", cell: (a) => a.next ?? "" },
      { header: "error", cell: (a) => a.error ?? "" },
      {
        header: "",
        cell: (a) => (
          <button type="button" aria-label={`Details of agent ${a.name}`} onClick={() => setSelected(a.name)}>
            Details
          </button>
        ),
      },
    ],
    [],
  );
  const chosen = agents.data?.agents.find((a) => a.name === selected);
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents</h2>
      {chosen ? <AgentDetails key={chosen.name} agent={chosen} onClose={() => setSelected(null)} /> : null}
      <Loaded resource={agents} what="agents">
        {(data) => (
          <FilteredTable label="agents" rows={data.agents} columns={columns} rowKey={(a) => `${a.target}/${a.name}`} searchText={searchText} empty="No agent deployed: berth deploy FILE." />
        )}
      </Loaded>
    </section>
  );
}
