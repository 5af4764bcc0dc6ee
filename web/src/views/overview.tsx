/**
 * The overview, the view the dashboard opens on (issue 13, "a dashboard people keep open"): what needs a person
 * (alerts.ts), agents by state, nodes with liveness and resources in units people read, unsettled decisions and the
 * newest audit events. Everything is a link to its detail view. It loads after the app's first node describe, so
 * the first thing it paints is the real state (node-directory.ts).
 */
import { useMemo } from "preact/hooks";
import { alertsOf } from "../alerts";
import { useTail } from "../audit-tail";
import { ago, timeOf } from "../format";
import { AgentLink, DecisionLink, InstanceLink } from "../links";
import { useLive, useResource } from "../live";
import { NodeCell, useNodeNames } from "../node-names";
import { ErrorNotice, Loading } from "../notice";
import { href } from "../route";
import { TableHead } from "../table";
import type { AgentState, InstanceInfo } from "../types";
import { stateClass } from "./agents";
import { EventList } from "./audit";
import { loadInstances } from "./instances";
import { nodeRef, resourcesOf } from "./nodes";

/** How many of the newest audit events the overview lists; the Audit view holds the rest of the tail. */
export const RECENT_EVENTS = 12;

function byState(agents: readonly AgentState[]): Array<readonly [string, number]> {
  const counts = new Map<string, number>();
  for (const a of agents) counts.set(a.state, (counts.get(a.state) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

function AgentsPanel({ agents, instances }: { agents: readonly AgentState[]; instances: readonly InstanceInfo[] }) {
  const names = useNodeNames();
  const nodeOf = useMemo(() => new Map(instances.map((i) => [i.instance_id, i.node_id])), [instances]);
  return (
    <section class="panel" aria-label="agents by state">
      <h3>
        Agents <a href={href("agents")}>all</a> · <a href={href("deploy")}>deploy</a>
      </h3>
      <p class="counts">
        {agents.length === 0
          ? "No agent deployed."
          : byState(agents).map(([state, n]) => (
              <span key={state} class={stateClass(state)}>
                {n} {state}
              </span>
            ))}
      </p>
      {agents.length > 0 ? (
        <table aria-label="agents overview">
          <TableHead columns={["agent", "state", "instance", "node"]} />
          <tbody>
            {agents.map((a) => {
              const node = a.instance ? nodeOf.get(a.instance) : undefined;
              return (
                <tr key={`${a.target}/${a.name}`}>
                  <td>
                    <AgentLink name={a.name} />
                  </td>
                  <td>
                    <span class={stateClass(a.state)}>{a.state}</span>
                  </td>
                  <td>
                    <InstanceLink id={a.instance} short />
                  </td>
                  <td>{node ? <NodeCell id={node} names={names} /> : a.target === "mesh" ? "—" : a.target}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function NodesPanel() {
  const { nodes } = useLive();
  const now = Date.now();
  return (
    <section class="panel" aria-label="nodes overview">
      <h3>
        Nodes <a href={href("nodes")}>all</a>
      </h3>
      <ErrorNotice error={nodes.error} action="Loading the nodes" />
      {nodes.list === null ? (
        <Loading what="nodes" />
      ) : nodes.list.length === 0 ? (
        <p class="empty">No node added yet.</p>
      ) : (
        <table aria-label="nodes at a glance">
          <TableHead columns={["node", "liveness", "memory", "load", "last answer"]} />
          <tbody>
            {nodes.list.map((n) => {
              const r = resourcesOf(n);
              return (
                <tr key={n.addr}>
                  <td>
                    <a href={href("nodes", nodeRef(n))}>{n.name ?? n.addr}</a>
                  </td>
                  <td>
                    <span class={`liveness ${n.liveness}`}>{n.liveness}</span>
                  </td>
                  <td>{r.memory}</td>
                  <td>{r.load}</td>
                  <td title={timeOf(n.last_ok_ms)}>{ago(n.last_ok_ms, now)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function OverviewView() {
  const live = useLive();
  const tail = useTail();
  const agents = useResource(async ({ api, nodes }) => {
    await nodes.described;
    return api.agents();
  });
  const instances = useResource(loadInstances);
  const unsettled = useResource(({ api }) => api.unsettled());
  const alerts = useMemo(
    () =>
      alertsOf({
        nodes: live.nodes.list ?? [],
        unsettled: unsettled.data?.unsettled ?? [],
        instances: instances.data?.instances ?? [],
        agents: agents.data?.agents ?? [],
        events: tail.events,
      }),
    [live.nodes.list, unsettled.data, instances.data, agents.data, tail.events],
  );
  const recent = useMemo(() => tail.events.slice(-RECENT_EVENTS).reverse(), [tail.events]);
  const ready = agents.data !== null && instances.data !== null && unsettled.data !== null;
  return (
    <section aria-labelledby="overview-title" class="overview">
      <h2 id="overview-title">Overview</h2>
      <ErrorNotice error={agents.error} action="Loading the agents" />
      <ErrorNotice error={instances.error} action="Loading the instances" />
      <ErrorNotice error={unsettled.error} action="Loading the unsettled decisions" />
      <section class="panel alerts" aria-label="alerts">
        <h3>Alerts</h3>
        {!ready ? (
          <Loading what="the state of the mesh" />
        ) : alerts.length === 0 ? (
          <p class="ok">
            Nothing needs you: every node answers, no decision is unsettled, no agent runs twice, nothing was denied
            recently.
          </p>
        ) : (
          <ul>
            {alerts.map((a) => (
              <li key={`${a.kind}-${a.id}`} class={`alert ${a.severity}`}>
                <strong>{a.kind}</strong> <a href={href(a.view, a.id)}>{a.text}</a>
              </li>
            ))}
          </ul>
        )}
      </section>
      <div class="panels">
        {agents.data && instances.data ? (
          <AgentsPanel agents={agents.data.agents} instances={instances.data.instances} />
        ) : (
          <Loading what="agents" />
        )}
        <NodesPanel />
        <section class="panel" aria-label="unsettled decisions overview">
          <h3>
            Unsettled decisions <a href={href("unsettled")}>settle</a>
          </h3>
          {unsettled.data === null ? (
            <Loading what="unsettled decisions" />
          ) : unsettled.data.unsettled.length === 0 ? (
            <p class="empty">None.</p>
          ) : (
            <ul>
              {unsettled.data.unsettled.map((u) => (
                <li key={u.decision_id}>
                  {u.name}: <DecisionLink id={u.decision_id} /> since {timeOf(u.created_ms)}
                </li>
              ))}
            </ul>
          )}
        </section>
        <section class="panel" aria-label="recent events">
          <h3>
            Recent events <a href={href("audit")}>all</a>
          </h3>
          {recent.length === 0 ? <p class="empty">No event yet ({tail.status}).</p> : <EventList events={recent} />}
        </section>
      </div>
    </section>
  );
}
