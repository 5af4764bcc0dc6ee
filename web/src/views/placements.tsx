/** Placements: every placement record; choosing one shows its decision's explain (candidates, scores, attempts). */
import { useCallback, useMemo, useState } from "preact/hooks";
import { ExplainView } from "../explain";
import { shortId, timeOf } from "../format";
import { useResource } from "../live";
import { NodeCell, type NodeNames, useNodeNames } from "../node-names";
import { Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { PlacementRecord } from "../types";

const searchText = (p: PlacementRecord, names: NodeNames) => [p.name, p.instance_id, p.node_id, names.get(p.node_id) ?? "", p.decision_id, p.variant, p.route].join(" ");

function PastDecision({ decisionId, name }: { decisionId: string; name: string }) {
  const report = useResource(({ api }) => api.placement(decisionId));
  return (
    <Loaded resource={report} what="the decision">
      {(data) => <ExplainView report={data} title={`Explain of placement ${name}`} />}
    </Loaded>
  );
}

export function PlacementsView() {
  const placements = useResource(({ api }) => api.placements());
  const [selected, setSelected] = useState<PlacementRecord | null>(null);
  const names = useNodeNames();
  const search = useCallback((p: PlacementRecord) => searchText(p, names), [names]);
  const columns = useMemo<Column<PlacementRecord>[]>(
    () => [
      { header: "name", cell: (p) => p.name },
      { header: "node", cell: (p) => <NodeCell id={p.node_id} names={names} /> },
      { header: "variant", cell: (p) => `${p.variant} (${p.route})` },
      { header: "decision", cell: (p) => <code title={p.decision_id}>{shortId(p.decision_id, 12)}</code> },
      { header: "placed", cell: (p) => `${timeOf(p.placed_ms)}${p.adopted ? " (adopted)" : ""}` },
      {
        header: "",
        cell: (p) => (
          <button type="button" aria-label={`Explain ${p.name}`} onClick={() => setSelected(p)}>
            Explain
          </button>
        ),
      },
    ],
    [names],
  );
  return (
    <section aria-labelledby="placements-title">
      <h2 id="placements-title">Placements</h2>
      <Loaded resource={placements} what="placements">
        {(data) => (
          <FilteredTable
            label="placements"
            rows={data.placements}
            columns={columns}
            rowKey={(p) => p.instance_id}
            searchText={search}
            empty="No placement yet: place a package."
          />
        )}
      </Loaded>
      {selected ? <PastDecision key={selected.decision_id} decisionId={selected.decision_id} name={selected.name} /> : null}
    </section>
  );
}
