/**
 * Where the dashboard is: `#/<view>` or `#/<view>/<id>` (an agent's name, an instance id, a node id, a decision id,
 * an audit event's seq). Every id in every list is a plain link to such an address, so a reload, the back button or
 * a link pasted into a chat opens the same detail view; the address never carries the token (session.ts strips it).
 */
import { useEffect, useState } from "preact/hooks";

export const VIEWS = [
  "overview",
  "agents",
  "deploy",
  "instances",
  "place",
  "placements",
  "nodes",
  "unsettled",
  "top",
  "kubernetes",
  "audit",
] as const;
export type View = (typeof VIEWS)[number];

export interface Route {
  readonly view: View;
  /** The object the view shows in detail, decoded; null for the list. */
  readonly id: string | null;
}

export function parseRoute(hash: string): Route {
  const [view = "", ...rest] = hash.replace(/^#\/?/, "").split("/");
  const known = VIEWS.find((v) => v === view);
  if (known === undefined) return { view: "overview", id: null };
  const raw = rest.join("/");
  let id: string | null = null;
  try {
    id = raw === "" ? null : decodeURIComponent(raw);
  } catch {
    id = null; // a malformed escape: show the list rather than a detail of nothing
  }
  return { view: known, id };
}

export function href(view: View, id?: string | number | null): string {
  return id === undefined || id === null || id === "" ? `#/${view}` : `#/${view}/${encodeURIComponent(String(id))}`;
}

/** Goes to an address as a link would (a history entry, a `hashchange`). */
export function navigate(view: View, id?: string | number | null): void {
  window.location.hash = href(view, id);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}
