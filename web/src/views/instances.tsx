/**
 * Instances: every placed instance with its state and node, a filter and pages for hundreds of them; choosing one
 * shows its placement's explain, its logs and the start/stop/unload verbs.
 */
import { useCallback, useMemo, useState } from "preact/hooks";
import { useAction } from "../action";
import { ExplainView } from "../explain";
import { timeOf } from "../format";
import { NodeCell, type NodeNames, useNodeNames } from "../node-names";
import { useResource } from "../live";
import { ErrorNotice, Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { InstanceInfo } from "../types";
import { LogText, VerbButton } from "../verbs";

const searchText = (i: InstanceInfo, names: NodeNames) => [i.name, i.instance_id, i.node_id, names.get(i.node_id) ?? "", i.state ?? "", i.pending ?? ""].join(" ");

const INSTANCE_VERBS = [
  ["start", "Start"],
  ["stop", "Stop"],
  ["unload", "Unload"],
] as const;

function InstanceDetails({ instance, names, onClose }: { instance: InstanceInfo; names: NodeNames; onClose: () => void }) {
  const decision = useResource(({ api }) => (instance.decision_id ? api.placement(instance.decision_id) : Promise.resolve(null)));
  const logs = useAction(({ api }) => api.instanceLogs(instance.instance_id));
  return (
    <section class="details" aria-label={`instance ${instance.name}`}>
      <h3>
        Instance {instance.name} <code>{instance.instance_id}</code>
      </h3>
      <button type="button" class="close" onClick={onClose}>
        Close details
      </button>
      <p>
        State <strong>{instance.state ?? "unknown"}</strong>
        {instance.pending ? ` (pending ${instance.pending})` : ""} on node <NodeCell id={instance.node_id} names={names} />, placed{" "}
        {timeOf(instance.placed_ms)}
        {instance.adopted ? ", adopted" : ""}.
      </p>
      <fieldset class="verbs">
        <legend>Instance verbs</legend>
        {INSTANCE_VERBS.map(([verb, label]) => (
          <VerbButton key={verb} verb={verb} label={label} perform={({ api }) => api.instanceVerb(instance.instance_id, verb)} />
        ))}
        <button type="button" disabled={logs.busy} onClick={logs.run}>
          Show logs
        </button>
      </fieldset>
      <ErrorNotice error={logs.error} action="Reading the logs" />
      {logs.result !== null ? <LogText logs={logs.result} /> : null}
      <ErrorNotice error={decision.error} action="Loading the placement's explain" />
      {decision.data ? <ExplainView report={decision.data} title={`Explain of ${instance.name}`} /> : null}
    </section>
  );
}

export function InstancesView() {
  const instances = useResource(({ api }) => api.instances());
  const [selected, setSelected] = useState<string | null>(null);
  const names = useNodeNames();
  const search = useCallback((i: InstanceInfo) => searchText(i, names), [names]);
  const columns = useMemo<Column<InstanceInfo>[]>(
    () => [
      { header: "name", cell: (i) => i.name },
      { header: "instance", cell: (i) => <code>{i.instance_id}</code> },
      { header: "node", cell: (i) => <NodeCell id={i.node_id} names={names} /> },
      { header: "state", cell: (i) => <span class={`state ${i.state ?? "unknown"}`}>{i.state ?? "unknown"}</span> },
      { header: "pending", cell: (i) => i.pending ?? "" },
      {
        header: "",
        cell: (i) => (
          <button type="button" aria-label={`Details of ${i.name}`} onClick={() => setSelected(i.instance_id)}>
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
      {chosen ? <InstanceDetails key={chosen.instance_id} instance={chosen} names={names} onClose={() => setSelected(null)} /> : null}
      {selected !== null && !chosen && instances.data ? <p role="status">Instance {selected} is gone (unloaded or replaced).</p> : null}
      <Loaded resource={instances} what="instances">
        {(data) => (
          <FilteredTable label="instances" rows={data.instances} columns={columns} rowKey={(i) => i.instance_id} searchText={search} empty="No instance is placed." />
        )}
      </Loaded>
    </section>
  );
}
