/** Agents (the one deploy model over both targets): each with its target, its state there and what comes next. */
import { useResource } from "../live";
import { Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { AgentState } from "../types";

const columns: Column<AgentState>[] = [
  { header: "name", cell: (a) => a.name },
  { header: "target", cell: (a) => a.target },
  { header: "state", cell: (a) => <span class={`state ${a.state.replace(/\s+/g, "-")}`}>{a.state}</span> },
  { header: "instance", cell: (a) => (a.instance ? <code>{a.instance}</code> : "—") },
  { header: "next", cell: (a) => a.next ?? "" },
  { header: "error", cell: (a) => a.error ?? "" },
];

const searchText = (a: AgentState) => [a.name, a.target, a.state, a.instance ?? ""].join(" ");

export function AgentsView() {
  const agents = useResource(({ api }) => api.agents());
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents</h2>
      <Loaded resource={agents} what="agents">
        {(data) => (
          <FilteredTable label="agents" rows={data.agents} columns={columns} rowKey={(a) => `${a.target}/${a.name}`} searchText={searchText} empty="No agent deployed: berth deploy FILE." />
        )}
      </Loaded>
    </section>
  );
}
