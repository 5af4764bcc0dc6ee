/**
 * Lists name nodes by id; people know them by name. One small `GET /nodes` per revision gives the names (the node's
 * facts' display name), and `NodeCell` shows the name with the short id beside it.
 */
import { useMemo } from "preact/hooks";
import { shortId } from "./format";
import { useResource } from "./live";

export type NodeNames = ReadonlyMap<string, string>;

export function useNodeNames(): NodeNames {
  const nodes = useResource(({ api }) => api.nodes());
  return useMemo(() => new Map((nodes.data?.nodes ?? []).flatMap((n) => (n.node_id && n.name ? [[n.node_id, n.name] as const] : []))), [nodes.data]);
}

export function NodeCell({ id, names }: { id: string; names: NodeNames }) {
  return (
    <span title={id}>
      {names.get(id) ?? "unnamed"} <code>{shortId(id)}</code>
    </span>
  );
}
