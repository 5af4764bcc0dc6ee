/**
 * Top (issue 36): CPU and memory of every running agent, from its cgroup on its node, read again every TOP_POLL_MS
 * (`berth top --watch` in the browser). The figures come from `GET /instances` (each row's `status.usage`); CPU needs
 * two readings, so it shows once the second has come.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { useLive } from "../live";
import { NodeCell, type NodeNames, useNodeNames } from "../node-names";
import { ErrorNotice } from "../notice";
import { type Column, FilteredTable } from "../table";
import { humanBytes, type TopRow, topRows, type Usage, usageOf } from "../top";

const TOP_POLL_MS = 2_000;

function columnsFor(names: NodeNames): Column<TopRow>[] {
  return [
    { header: "agent", cell: (r) => r.agent },
    { header: "instance", cell: (r) => r.instance_id },
    { header: "node", cell: (r) => <NodeCell id={r.node_id} names={names} /> },
    { header: "CPU", cell: (r) => (r.cpu_percent === null ? "-" : `${r.cpu_percent.toFixed(1)}%`) },
    { header: "memory", cell: (r) => (r.memory_bytes === null ? "-" : humanBytes(r.memory_bytes)) },
  ];
}

const searchText = (r: TopRow) => [r.agent, r.instance_id, r.node_id].join(" ");

export function TopView() {
  const { api } = useLive();
  const [rows, setRows] = useState<TopRow[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const before = useRef(new Map<string, Usage>());
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const { instances } = await api.instances();
        if (stopped) return;
        setRows(topRows(instances, before.current));
        before.current = new Map(
          instances.flatMap((i) => (usageOf(i) ? [[i.instance_id, usageOf(i) as Usage] as const] : [])),
        );
        setError(null);
      } catch (e) {
        if (!stopped) setError(e);
      }
      if (!stopped) timer = setTimeout(tick, TOP_POLL_MS);
    };
    void tick();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [api]);
  const names = useNodeNames();
  const columns = useMemo(() => columnsFor(names), [names]);
  return (
    <section aria-labelledby="top-title">
      <h2 id="top-title">Top</h2>
      <p class="hint">
        CPU (percent of one core between two readings, {TOP_POLL_MS / 1000} s apart) and memory of every running agent,
        from its cgroup on its node, as `berth top` shows them.
      </p>
      <ErrorNotice error={error} action="Reading the instances" />
      {rows === null ? (
        <p>Loading…</p>
      ) : (
        <FilteredTable
          label="top"
          rows={rows}
          columns={columns}
          rowKey={(r) => r.instance_id}
          searchText={searchText}
          empty="No running agent."
        />
      )}
    </section>
  );
}
