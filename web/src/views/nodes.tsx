/** Nodes: each target with its tier, liveness and the facts it last described (issue 8 §3). */
import { useRef, useState } from "preact/hooks";
import { useAction } from "../action";
import { shortId, timeOf } from "../format";
import { useLive, useResource } from "../live";
import { ErrorNotice, Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { NodeInfo } from "../types";

/** A few facts in one line ("board pi5 · arch aarch64 · memory …"); the whole set is in the row's details. */
function factsSummary(facts: NodeInfo["facts"]): string {
  if (!facts) return "—";
  return Object.entries(facts)
    .filter(([k]) => k !== "name")
    .flatMap(([k, v]) => (Array.isArray(v) ? [`${k} ${v.join(",")}`] : v !== null && typeof v !== "object" ? [`${k} ${String(v)}`] : []))
    .slice(0, 6)
    .join(" · ");
}

const TIERS = ["discovered", "paired", "pinned"] as const;

/** The operator's tier for a node (never self-asserted): changing it is a chained `peer.tier` through the API. */
function TierSelect({ node }: { node: NodeInfo }) {
  const { api, bump } = useLive();
  const [error, setError] = useState<unknown>(null);
  const ref = node.node_id ?? node.addr;
  return (
    <>
      <select
        aria-label={`Tier of ${node.name ?? ref}`}
        value={node.tier}
        onChange={async (e) => {
          setError(null);
          try {
            await api.setTier(ref, e.currentTarget.value);
          } catch (failure) {
            setError(failure);
          }
          bump();
        }}
      >
        {TIERS.map((t) => (
          <option key={t}>{t}</option>
        ))}
      </select>{" "}
      <span class="hint">({node.tier_source})</span>
      <ErrorNotice error={error} action="Setting the tier" />
    </>
  );
}

const columns: Column<NodeInfo>[] = [
  { header: "name", cell: (n) => n.name ?? "—" },
  { header: "node", cell: (n) => <code title={n.node_id ?? ""}>{shortId(n.node_id)}</code> },
  { header: "address", cell: (n) => n.addr },
  { header: "tier", cell: (n) => <TierSelect node={n} /> },
  { header: "liveness", cell: (n) => <span class={`liveness ${n.liveness}`}>{n.liveness}</span> },
  { header: "last answer", cell: (n) => timeOf(n.last_ok_ms) },
  {
    header: "facts",
    cell: (n) =>
      n.facts ? (
        <details>
          <summary>{factsSummary(n.facts)}</summary>
          <pre>{JSON.stringify(n.facts, null, 2)}</pre>
        </details>
      ) : (
        "—"
      ),
  },
  { header: "error", cell: (n) => n.error ?? "" },
];

const searchText = (n: NodeInfo) => [n.name, n.node_id, n.addr, n.tier, n.liveness, factsSummary(n.facts)].join(" ");

export function NodesView() {
  // The first load describes every node, so the view opens on current liveness and facts; later loads (every
  // revision) read what the controller holds, and the button describes them again on demand.
  const described = useRef(false);
  const nodes = useResource(({ api }) => {
    const refresh = !described.current;
    described.current = true;
    return api.nodes(refresh);
  });
  const refresh = useAction(({ api }) => api.nodes(true));
  return (
    <section aria-labelledby="nodes-title">
      <h2 id="nodes-title">Nodes</h2>
      <button type="button" disabled={refresh.busy} onClick={refresh.run}>
        Refresh nodes
      </button>
      <ErrorNotice error={refresh.error} action="Refreshing the nodes" />
      <Loaded resource={nodes} what="nodes">
        {(data) => (
          <FilteredTable label="nodes" rows={data.nodes} columns={columns} rowKey={(n) => n.addr} searchText={searchText} empty="No node added yet." />
        )}
      </Loaded>
    </section>
  );
}
