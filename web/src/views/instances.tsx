/**
 * Instances: every placed instance with its state and node, a filter and pages for hundreds of them; `#/instances/ID`
 * shows one: its placement's explain, its logs (followed live) and the start/stop/unload verbs.
 */
import { useCallback, useMemo } from "preact/hooks";
import { ExplainView } from "../explain";
import { FollowedLogs } from "../follow-logs";
import { ago, timeOf } from "../format";
import { AgentLink, DecisionLink, InstanceLink } from "../links";
import { type Live, useResource } from "../live";
import { NodeCell, type NodeNames, useNodeNames } from "../node-names";
import { ErrorNotice, Loaded } from "../notice";
import { href, navigate } from "../route";
import { type Column, FilteredTable } from "../table";
import type { InstanceInfo, MovedInfo } from "../types";
import { VerbButton } from "../verbs";

/**
 * The instance list with the states their nodes report. The first load waits for the app's first node describe
 * (node-directory.ts): before it, a restarted controller answers every state "unknown".
 */
/** The agent an instance belongs to, as its node's status row names it; a package placed by hand has none. */
export function agentOf(i: InstanceInfo): string | null {
  const agent = i.status?.agent;
  return typeof agent === "string" && agent !== "" ? agent : null;
}

export function InstanceName({ instance }: { instance: InstanceInfo }) {
  const agent = agentOf(instance);
  return agent === null ? instance.name : <AgentLink name={agent} />;
}

export async function loadInstances({ api, nodes }: Live) {
  await nodes.described;
  return api.instances();
}

const searchText = (i: InstanceInfo, names: NodeNames) =>
  [i.name, i.instance_id, i.node_id, names.get(i.node_id) ?? "", i.state, i.pending ?? ""].join(" ");

/** Each verb, its label, and the question it asks first when it takes something down (confirm.tsx, issue 36). */
const INSTANCE_VERBS = [
  ["start", "Start", null],
  ["stop", "Stop", "Stop this instance? Its process ends."],
  ["unload", "Unload", "Unload this instance? Its process ends and the node forgets it."],
] as const;

function InstanceDetails({ instance, names }: { instance: InstanceInfo; names: NodeNames }) {
  const decision = useResource(({ api }) =>
    instance.decision_id ? api.placement(instance.decision_id) : Promise.resolve(null),
  );
  return (
    <section class="details" aria-label={`instance ${instance.name}`}>
      <h3>
        Instance {instance.name} <code>{instance.instance_id}</code>
      </h3>
      <a class="close" href={href("instances")}>
        Close details
      </a>
      <p>
        {agentOf(instance) ? (
          <>
            Agent <InstanceName instance={instance} />, decision{" "}
          </>
        ) : (
          "Placed by hand, decision "
        )}
        <DecisionLink id={instance.decision_id} />. State <strong>{instance.state}</strong>
        {instance.pending ? ` (pending ${instance.pending})` : ""} on node{" "}
        <NodeCell id={instance.node_id} names={names} />, placed {timeOf(instance.placed_ms)}
        {instance.adopted ? ", adopted" : ""}.
      </p>
      <fieldset class="verbs">
        <legend>Instance verbs</legend>
        {INSTANCE_VERBS.map(([verb, label, question]) => (
          <VerbButton
            key={verb}
            verb={verb}
            label={label}
            {...(question ? { confirm: question } : {})}
            perform={({ api }) => api.instanceVerb(instance.instance_id, verb)}
          />
        ))}
      </fieldset>
      <FollowedLogs buttonLabel="Show logs" load={(api) => api.instanceLogs(instance.instance_id)} />
      <ErrorNotice error={decision.error} action="Loading the placement's explain" />
      {decision.data ? <ExplainView report={decision.data} title={`Explain of ${instance.name}`} /> : null}
    </section>
  );
}

/** Who took a placement off its node, as `berth instances` words it (src/cli/mesh.ts). */
const MOVED_BY: Readonly<Record<MovedInfo["authority"], string>> = {
  lease: "lease ran out",
  lost: "lost",
  drain: "drained",
  forget: "node forgotten",
};

/**
 * Placements taken off their node (issue 16: a lease that ran out, a lost instance, a drain, a forget): the old copy
 * may still live on a node that has not answered since, and berth stops or unloads it when it does. Shown under the
 * instances so nobody mistakes a cut-off node's agent for an orphan; nothing is shown when there is none.
 */
function MovedList({ names }: { names: NodeNames }) {
  const moved = useResource(({ api }) => api.moved());
  const rows = moved.data?.moved ?? [];
  if (moved.error === null && rows.length === 0) return null;
  return (
    <section aria-labelledby="moved-title">
      <h3 id="moved-title">Moved off their node</h3>
      <p class="hint">Each old copy is stopped or unloaded when its node answers.</p>
      <ErrorNotice error={moved.error} action="Loading the moved placements" />
      <table aria-label="moved">
        <thead>
          <tr>
            <th>name</th>
            <th>old instance</th>
            <th>old node</th>
            <th>moved by</th>
            <th>when</th>
            <th>replaced by</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((m) => (
            <tr key={m.instance_id}>
              <td>{m.name}</td>
              <td>
                <code>{m.instance_id}</code>
              </td>
              <td>
                <NodeCell id={m.node_id} names={names} />
              </td>
              <td>{MOVED_BY[m.authority] ?? m.authority}</td>
              <td title={timeOf(m.moved_ms)}>{ago(m.moved_ms, Date.now())}</td>
              <td>{m.successor === null ? "not placed again yet" : <DecisionLink id={m.successor} />}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function InstancesView({ selected }: { selected: string | null }) {
  const instances = useResource(loadInstances);
  const names = useNodeNames();
  const search = useCallback((i: InstanceInfo) => searchText(i, names), [names]);
  const columns = useMemo<Column<InstanceInfo>[]>(
    () => [
      { header: "name", cell: (i) => <InstanceName instance={i} /> },
      { header: "instance", cell: (i) => <InstanceLink id={i.instance_id} /> },
      { header: "node", cell: (i) => <NodeCell id={i.node_id} names={names} /> },
      { header: "state", cell: (i) => <span class={`state ${i.state}`}>{i.state}</span> },
      { header: "pending", cell: (i) => i.pending ?? "" },
      {
        header: "",
        cell: (i) => (
          <button
            type="button"
            aria-label={`Details of ${i.name}`}
            onClick={() => navigate("instances", i.instance_id)}
          >
            Details
          </button>
        ),
      },
    ],
    [names],
  );
  const rows = instances.data?.instances ?? [];
  const chosen = selected === null ? undefined : rows.find((i) => i.instance_id === selected);
  return (
    <section aria-labelledby="instances-title">
      <h2 id="instances-title">Instances</h2>
      {chosen ? <InstanceDetails key={chosen.instance_id} instance={chosen} names={names} /> : null}
      {selected !== null && !chosen && instances.data ? (
        <p role="status">Instance {selected} is gone (unloaded or replaced).</p>
      ) : null}
      <Loaded resource={instances} what="instances">
        {(data) => (
          <FilteredTable
            label="instances"
            rows={data.instances}
            columns={columns}
            rowKey={(i) => i.instance_id}
            searchText={search}
            empty="No instance is placed."
          />
        )}
      </Loaded>
      <MovedList names={names} />
    </section>
  );
}
