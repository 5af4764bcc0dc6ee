/** Kubernetes agents (one bare Pod per agent), or a plain statement that no Kubernetes context is configured. */
import { useResource } from "../live";
import { ErrorNotice, Loaded } from "../notice";
import { type Column, FilteredTable } from "../table";
import type { KubernetesAgent } from "../types";

const columns: Column<KubernetesAgent>[] = [
  { header: "name", cell: (a) => a.name },
  { header: "namespace", cell: (a) => a.namespace },
  { header: "startup", cell: (a) => a.startup },
  { header: "binding", cell: (a) => <code>{a.binding}</code> },
  { header: "registry", cell: (a) => a.registry },
];

const searchText = (a: KubernetesAgent) => [a.name, a.namespace, a.startup, a.registry].join(" ");

export function KubernetesView() {
  const k8s = useResource(({ api }) => api.kubernetesAgents());
  return (
    <section aria-labelledby="k8s-title">
      <h2 id="k8s-title">Kubernetes agents</h2>
      <Loaded resource={k8s} what="Kubernetes agents">
        {(data) =>
          data.configured ? (
            <>
              {data.context ? <p>Context {data.context}</p> : null}
              <ErrorNotice error={data.error} action="Listing the agent pods" />
              <FilteredTable
                label="Kubernetes agents"
                rows={data.agents}
                columns={columns}
                rowKey={(a) => `${a.namespace}/${a.name}`}
                searchText={searchText}
                empty="No berth-managed Pod."
              />
            </>
          ) : (
            <p role="status">
              No Kubernetes context configured: berth runs on the mesh only. Configure a kubeconfig context to see
              Kubernetes agents here.
            </p>
          )
        }
      </Loaded>
    </section>
  );
}
