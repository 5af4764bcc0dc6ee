/**
 * Nodes: each target with its tier, liveness and the facts it last described (issue 8 §3), its resources in units
 * people read; `#/nodes/ID` (node id, or address before the first describe) shows one with the instances it holds.
 */
import { useState } from "preact/hooks";
import { useAction } from "../action";
import { ago, bytes, percent, shortId, timeOf } from "../format";
import { InstanceLink } from "../links";
import { useLive, useResource } from "../live";
import { ErrorNotice, Loaded, Loading } from "../notice";
import { href } from "../route";
import { type Column, FilteredTable } from "../table";
import type { NodeInfo } from "../types";
import { loadInstances, InstanceName } from "./instances";

/** The resource facts the server summarises (src/mesh/controller/views.ts factsSummary), read defensively. */
export function resourcesOf(n: NodeInfo) {
  const f = n.facts ?? {};
  const num = (k: string) => (typeof f[k] === "number" ? (f[k] as number) : null);
  const total = num("memory_total_bytes");
  const available = num("memory_available_bytes");
  const used = total !== null && available !== null ? total - available : null;
  const load = num("load1_milli");
  const cpus = num("cpu_count");
  return {
    memory: total === null ? "—" : `${bytes(used)} of ${bytes(total)} used (${percent(used, total)})`,
    load: load === null ? "—" : `${(load / 1000).toFixed(2)}${cpus ? ` on ${cpus} CPU${cpus === 1 ? "" : "s"}` : ""}`,
    platform: [f.board, f.arch, f.os].filter((v) => typeof v === "string").join(" · ") || "—",
  };
}

export function nodeRef(n: NodeInfo): string {
  return n.node_id ?? n.addr;
}

/** Facts with a column of their own (memory, load) or no meaning at a glance, left out of the one-line summary. */
const SHOWN_ELSEWHERE = new Set([
  "name",
  "memory_total_bytes",
  "memory_available_bytes",
  "load1_milli",
  "cpu_count",
  "issued_at_ms",
]);

/** A few facts in one line ("board pi5 · arch aarch64 · room garage"); the whole set is in the row's details. */
function factsSummary(facts: NodeInfo["facts"]): string {
  if (!facts) return "—";
  return Object.entries(facts)
    .filter(([k]) => !SHOWN_ELSEWHERE.has(k))
    .flatMap(([k, v]) => {
      if (Array.isArray(v)) return v.length === 0 ? [] : [`${k} ${v.join(",")}`];
      if (v !== null && typeof v === "object") return Object.entries(v).map(([lk, lv]) => `${lk} ${String(lv)}`);
      return v === null ? [] : [`${k} ${String(v)}`];
    })
    .slice(0, 6)
    .join(" · ");
}

/**
 * The operator's marks on a node (issue 16: `berth node cordon|drain|forget`), as `berth nodes list` words them: a
 * forgotten node is cordoned too, and forget says it all. Empty for a node nobody marked.
 */
export function operatorMark(n: NodeInfo): string {
  if (n.forgotten_ms !== null)
    return `forgotten ${timeOf(n.forgotten_ms)}${n.forget_reason ? ` (${n.forget_reason})` : ""}`;
  if (n.cordoned) return `cordoned${n.cordon_reason ? ` (${n.cordon_reason})` : ""}`;
  return "";
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
  { header: "name", cell: (n) => <a href={href("nodes", nodeRef(n))}>{n.name ?? "unnamed"}</a> },
  { header: "node", cell: (n) => <code title={n.node_id ?? ""}>{shortId(n.node_id)}</code> },
  { header: "address", cell: (n) => n.addr },
  { header: "tier", cell: (n) => <TierSelect node={n} /> },
  { header: "liveness", cell: (n) => <span class={`liveness ${n.liveness}`}>{n.liveness}</span> },
  { header: "operator", cell: (n) => <span class="mark">{operatorMark(n)}</span> },
  { header: "last answer", cell: (n) => <span title={timeOf(n.last_ok_ms)}>{ago(n.last_ok_ms, Date.now())}</span> },
  { header: "memory", cell: (n) => resourcesOf(n).memory },
  { header: "load", cell: (n) => resourcesOf(n).load },
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

const searchText = (n: NodeInfo) =>
  [n.name, n.node_id, n.addr, n.tier, n.liveness, operatorMark(n), factsSummary(n.facts)].join(" ");

function NodeDetails({ node }: { node: NodeInfo }) {
  const instances = useResource(loadInstances);
  const here = (instances.data?.instances ?? []).filter((i) => i.node_id === node.node_id);
  const r = resourcesOf(node);
  return (
    <section class="details" aria-label={`node ${node.name ?? node.addr}`}>
      <h3>
        Node {node.name ?? "unnamed"} <code>{node.node_id ?? node.addr}</code>
      </h3>
      <a class="close" href={href("nodes")}>
        Close details
      </a>
      <dl class="facts">
        <dt>address</dt>
        <dd>{node.addr}</dd>
        <dt>liveness</dt>
        <dd>
          <span class={`liveness ${node.liveness}`}>{node.liveness}</span>, last answer{" "}
          {ago(node.last_ok_ms, Date.now())} ({timeOf(node.last_ok_ms)})
        </dd>
        <dt>tier</dt>
        <dd>
          {node.tier} ({node.tier_source})
        </dd>
        {operatorMark(node) ? (
          <>
            <dt>operator</dt>
            <dd>{operatorMark(node)}: nothing new is placed here</dd>
          </>
        ) : null}
        <dt>platform</dt>
        <dd>{r.platform}</dd>
        <dt>memory</dt>
        <dd>{r.memory}</dd>
        <dt>load (1 min)</dt>
        <dd>{r.load}</dd>
        {node.error ? (
          <>
            <dt>error</dt>
            <dd class="error">{node.error}</dd>
          </>
        ) : null}
      </dl>
      <h4>Instances on this node</h4>
      <ErrorNotice error={instances.error} action="Loading the instances" />
      {instances.data === null ? (
        <Loading what="instances" />
      ) : here.length === 0 ? (
        <p class="empty">No instance is placed here.</p>
      ) : (
        <ul>
          {here.map((i) => (
            <li key={i.instance_id}>
              <InstanceName instance={i} /> <InstanceLink id={i.instance_id} /> {i.state}
            </li>
          ))}
        </ul>
      )}
      {node.facts ? (
        <details>
          <summary>All facts</summary>
          <pre>{JSON.stringify(node.facts, null, 2)}</pre>
        </details>
      ) : null}
    </section>
  );
}

export function NodesView({ selected }: { selected: string | null }) {
  // The app describes every node once when it opens (node-directory.ts), so this view opens on current liveness and
  // facts; later it shows what the controller holds at each revision, and the button describes them again.
  const { nodes } = useLive();
  const refresh = useAction(({ api }) => api.nodes(true));
  const chosen =
    selected === null ? undefined : (nodes.list ?? []).find((n) => nodeRef(n) === selected || n.addr === selected);
  return (
    <section aria-labelledby="nodes-title">
      <h2 id="nodes-title">Nodes</h2>
      {chosen ? <NodeDetails key={nodeRef(chosen)} node={chosen} /> : null}
      {selected !== null && !chosen && nodes.list ? (
        <p role="status">No node {selected} is known to this controller.</p>
      ) : null}
      <button type="button" disabled={refresh.busy} onClick={refresh.run}>
        Refresh nodes
      </button>
      <ErrorNotice error={refresh.error} action="Refreshing the nodes" />
      <Loaded
        resource={{ data: nodes.list === null ? null : { nodes: nodes.list }, error: nodes.error as Error | null }}
        what="nodes"
      >
        {(data) => (
          <FilteredTable
            label="nodes"
            rows={data.nodes}
            columns={columns}
            rowKey={(n) => n.addr}
            searchText={searchText}
            empty="No node added yet."
          />
        )}
      </Loaded>
    </section>
  );
}
