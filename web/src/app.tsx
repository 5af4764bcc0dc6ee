/**
 * The dashboard's frame: the token, the API client, the live revision and audit tail, and one view at a time chosen
 * from the tab list.
 */
import { useMemo, useState } from "preact/hooks";
import { BerthApi } from "./api";
import { useAuditTail } from "./audit-tail";
import { LiveContext, useRevision } from "./live";
import { AgentsView } from "./views/agents";
import { AuditView } from "./views/audit";
import { InstancesView } from "./views/instances";
import { KubernetesView } from "./views/kubernetes";
import { NodesView } from "./views/nodes";
import { PlaceView } from "./views/place";
import { PlacementsView } from "./views/placements";
import { UnsettledView } from "./views/unsettled";

const TABS = [
  ["instances", "Instances"],
  ["place", "Place a package"],
  ["placements", "Placements"],
  ["nodes", "Nodes"],
  ["unsettled", "Unsettled"],
  ["agents", "Agents"],
  ["kubernetes", "Kubernetes"],
  ["audit", "Audit"],
] as const;
type Tab = (typeof TABS)[number][0];

/** The view in the address (`#/nodes`), so a reload or a shared link opens the same view (never the token). */
function tabInLocation(): Tab {
  const named = window.location.hash.replace(/^#\/?/, "");
  return TABS.find(([id]) => id === named)?.[0] ?? "instances";
}

export function NoToken() {
  return (
    <main>
      <h1>berth</h1>
      <p role="alert">
        This page needs the API token. Open the dashboard URL that <code>berth serve</code> (or <code>berth up</code>) printed: it ends in{" "}
        <code>#token=…</code>. The token is also in <code>$BERTH_HOME/api.token</code>.
      </p>
    </main>
  );
}

export function App({ token }: { token: string }) {
  const api = useMemo(() => new BerthApi(token), [token]);
  const { revision, bump } = useRevision();
  const tail = useAuditTail(api, bump);
  const [tab, setTab] = useState<Tab>(tabInLocation);
  const show = (id: Tab) => {
    setTab(id);
    history.replaceState(null, "", `#/${id}`);
  };
  const live = useMemo(() => ({ api, revision, bump }), [api, revision, bump]);

  return (
    <LiveContext.Provider value={live}>
      <header>
        <h1>berth</h1>
        <div role="tablist" aria-label="views">
          {TABS.map(([id, label]) => (
            <button type="button" role="tab" key={id} id={`tab-${id}`} aria-selected={tab === id} aria-controls="view" onClick={() => show(id)}>
              {label}
            </button>
          ))}
        </div>
        <span class="stream-status">audit: {tail.status}</span>
      </header>
      <main>
        <div id="view" role="tabpanel" aria-labelledby={`tab-${tab}`}>
          {tab === "instances" && <InstancesView />}
          {tab === "place" && <PlaceView />}
          {tab === "placements" && <PlacementsView />}
          {tab === "nodes" && <NodesView />}
          {tab === "unsettled" && <UnsettledView />}
          {tab === "agents" && <AgentsView />}
          {tab === "kubernetes" && <KubernetesView />}
          {tab === "audit" && <AuditView tail={tail} />}
        </div>
      </main>
    </LiveContext.Provider>
  );
}
