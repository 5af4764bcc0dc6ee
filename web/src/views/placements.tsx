/**
 * Placements: every placement record; `#/placements/DECISION_ID` shows that decision's explain (candidates, scores,
 * attempts), whether or not a placement still holds it (an unsettled, replaced or dry-run decision too).
 */
import { useCallback, useMemo } from "preact/hooks";
import { ExplainView } from "../explain";
import { timeOf } from "../format";
import { DecisionLink, InstanceLink } from "../links";
import { useResource } from "../live";
import { navigate } from "../route";
import { NodeCell, type NodeNames, useNodeNames } from "../node-names";
import { Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { PlacementRecord } from "../types";

const searchText = (p: PlacementRecord, names: NodeNames) =>
  [p.name, p.instance_id, p.node_id, names.get(p.node_id) ?? "", p.decision_id, p.variant, p.route].join(" ");

function PastDecision({ decisionId }: { decisionId: string }) {
  const report = useResource(({ api }) => api.placement(decisionId));
  return (
    <Loaded resource={report} what="the decision">
      {(data) => <ExplainView report={data} title={`Explain of placement ${data.name}`} />}
    </Loaded>
  );
}

export function PlacementsView({ selected }: { selected: string | null }) {
  const placements = useResource(({ api }) => api.placements());
  const names = useNodeNames();
  const search = useCallback((p: PlacementRecord) => searchText(p, names), [names]);
  const columns = useMemo<Column<PlacementRecord>[]>(
    () => [
      { header: "name", cell: (p) => p.name },
      { header: "instance", cell: (p) => <InstanceLink id={p.instance_id} short /> },
      { header: "node", cell: (p) => <NodeCell id={p.node_id} names={names} /> },
      { header: "variant", cell: (p) => `${p.variant} (${p.route})` },
      { header: "decision", cell: (p) => <DecisionLink id={p.decision_id} /> },
      { header: "placed", cell: (p) => `${timeOf(p.placed_ms)}${p.adopted ? " (adopted)" : ""}` },
      {
        header: "",
        cell: (p) => (
          <button type="button" aria-label={`Explain ${p.name}`} onClick={() => navigate("placements", p.decision_id)}>
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
      {selected ? <PastDecision key={selected} decisionId={selected} /> : null}
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
    </section>
  );
}
