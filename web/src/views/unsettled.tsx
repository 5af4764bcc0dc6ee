/** Unsettled decisions (lost answers not yet reconciled), and the settle button that asks their nodes again. */
import { useMemo } from "preact/hooks";
import { useAction } from "../action";
import { timeOf } from "../format";
import { DecisionLink } from "../links";
import { useResource } from "../live";
import { NodeCell, type NodeNames, useNodeNames } from "../node-names";
import { ErrorNotice, Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { UnsettledDecision } from "../types";

function columnsFor(names: NodeNames): Column<UnsettledDecision>[] {
  return [
    { header: "name", cell: (u) => u.name },
    { header: "decision", cell: (u) => <DecisionLink id={u.decision_id} /> },
    { header: "node", cell: (u) => <NodeCell id={u.node_id} names={names} /> },
    { header: "variant", cell: (u) => u.variant },
    { header: "since", cell: (u) => timeOf(u.created_ms) },
  ];
}

const searchText = (u: UnsettledDecision) => [u.name, u.decision_id, u.node_id, u.variant].join(" ");

export function UnsettledView() {
  const unsettled = useResource(({ api }) => api.unsettled());
  const settle = useAction(({ api }) => api.settle());
  const names = useNodeNames();
  const columns = useMemo(() => columnsFor(names), [names]);
  return (
    <section aria-labelledby="unsettled-title">
      <h2 id="unsettled-title">Unsettled decisions</h2>
      <p class="hint">
        A decision whose answer was lost and could not be reconciled holds its name until its node answers: settling
        adopts the one instance the node holds, never unloads it.
      </p>
      <button type="button" disabled={settle.busy} onClick={settle.run}>
        Settle unsettled decisions
      </button>
      {settle.result ? (
        <output>
          {`Settled: adopted ${settle.result.settled.adopted}, settled empty ${settle.result.settled.settledEmpty}, still unsettled ${settle.result.unsettled.length}.`}
          {settle.result.settled.skipped.map((s) => (
            <div key={s.decision_id}>
              <DecisionLink id={s.decision_id} />: {s.reason}
            </div>
          ))}
        </output>
      ) : null}
      <ErrorNotice error={settle.error} action="Settling" />
      <Loaded resource={unsettled} what="unsettled decisions">
        {(data) => (
          <FilteredTable
            label="unsettled decisions"
            rows={data.unsettled}
            columns={columns}
            rowKey={(u) => u.decision_id}
            searchText={searchText}
            empty="No unsettled decision."
          />
        )}
      </Loaded>
    </section>
  );
}
