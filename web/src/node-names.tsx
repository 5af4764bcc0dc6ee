/** Lists name nodes by id; people know them by name. `NodeCell` shows the name, the short id, and links to the node. */
import { shortId } from "./format";
import { useLive } from "./live";
import { href } from "./route";

export type NodeNames = ReadonlyMap<string, string>;

export function useNodeNames(): NodeNames {
  return useLive().nodes.names;
}

export function NodeCell({ id, names }: { id: string; names: NodeNames }) {
  return (
    <a href={href("nodes", id)} title={id}>
      {names.get(id) ?? "unnamed"} <code>{shortId(id)}</code>
    </a>
  );
}
