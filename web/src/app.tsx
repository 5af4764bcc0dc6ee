/**
 * The dashboard's frame: the token, the API client, the live revision, the node directory (described once when the
 * app opens, for a first paint with real states) and the audit tail, and one view at a time, chosen by the address
 * (route.ts: `#/agents/heartbeat` opens that agent's detail; the tab list only changes the address).
 */
import { useEffect, useMemo } from "preact/hooks";
import { BerthApi } from "./api";
import { TailContext, useAuditTail } from "./audit-tail";
import { LiveContext, useRevision } from "./live";
import { useNodeDirectory } from "./node-directory";
import { navigate, useRoute, type View } from "./route";
import { AgentsView } from "./views/agents";
import { AuditView } from "./views/audit";
import { DeployView } from "./views/deploy";
import { InstancesView } from "./views/instances";
import { KubernetesView } from "./views/kubernetes";
import { NodesView } from "./views/nodes";
import { OverviewView } from "./views/overview";
import { PlaceView } from "./views/place";
import { PlacementsView } from "./views/placements";
import { TopView } from "./views/top";
import { UnsettledView } from "./views/unsettled";

const TABS: ReadonlyArray<readonly [View, string]> = [
  ["overview", "Overview"],
  ["agents", "Agents"],
  ["deploy", "Deploy an agent"],
  ["instances", "Instances"],
  ["place", "Place a package"],
  ["placements", "Placements"],
  ["nodes", "Nodes"],
  ["unsettled", "Unsettled"],
  ["top", "Top"],
  ["kubernetes", "Kubernetes"],
  ["audit", "Audit"],
];

export function NoToken() {
  return (
    <main>
      <h1>berth</h1>
      <p role="alert">
        This page needs the API token. Open the dashboard URL that <code>berth serve</code> (or <code>berth up</code>)
        printed: it ends in <code>#token=…</code>. The token is also in <code>$BERTH_HOME/api.token</code>.
      </p>
    </main>
  );
}

export function App({ token }: { token: string }) {
  const api = useMemo(() => new BerthApi(token), [token]);
  const { revision, bump } = useRevision();
  const tail = useAuditTail(api, bump);
  const nodes = useNodeDirectory(api, revision);
  const route = useRoute();
  // A describe slower than DESCRIBE_WAIT_MS let the views load without it: once it answers, they load again.
  useEffect(() => {
    void nodes.described.then(bump);
  }, [nodes.described, bump]);
  const live = useMemo(() => ({ api, revision, bump, nodes }), [api, revision, bump, nodes]);
  const { view, id } = route;

  return (
    <LiveContext.Provider value={live}>
      <TailContext.Provider value={tail}>
        <header>
          <h1>berth</h1>
          <div role="tablist" aria-label="views">
            {TABS.map(([tab, label]) => (
              <button
                type="button"
                role="tab"
                key={tab}
                id={`tab-${tab}`}
                aria-selected={view === tab}
                aria-controls="view"
                onClick={() => navigate(tab)}
              >
                {label}
              </button>
            ))}
          </div>
          <span class="stream-status">audit: {tail.status}</span>
        </header>
        <main>
          <div id="view" role="tabpanel" aria-labelledby={`tab-${view}`}>
            {view === "overview" && <OverviewView />}
            {view === "agents" && <AgentsView selected={id} />}
            {view === "deploy" && <DeployView />}
            {view === "instances" && <InstancesView selected={id} />}
            {view === "place" && <PlaceView />}
            {view === "placements" && <PlacementsView selected={id} />}
            {view === "nodes" && <NodesView selected={id} />}
            {view === "unsettled" && <UnsettledView />}
            {view === "top" && <TopView />}
            {view === "kubernetes" && <KubernetesView />}
            {view === "audit" && <AuditView tail={tail} selected={id} />}
          </div>
        </main>
      </TailContext.Provider>
    </LiveContext.Provider>
  );
}
