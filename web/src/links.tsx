/** Every id the dashboard shows is a link to its detail view (route.ts): agents, instances, decisions, audit events. */
import { shortId } from "./format";
import { href } from "./route";

export function AgentLink({ name }: { name: string }) {
  return <a href={href("agents", name)}>{name}</a>;
}

export function InstanceLink({ id, short = false }: { id: string | null | undefined; short?: boolean }) {
  if (!id) return <>—</>;
  return (
    <a href={href("instances", id)} title={id}>
      <code>{short ? shortId(id, 16) : id}</code>
    </a>
  );
}

export function DecisionLink({ id }: { id: string | null | undefined }) {
  if (!id) return <>—</>;
  return (
    <a href={href("placements", id)} title={id}>
      <code>{shortId(id, 12)}</code>
    </a>
  );
}

export function EventLink({ seq }: { seq: number }) {
  return (
    <a href={href("audit", seq)} class="seq">
      #{seq}
    </a>
  );
}
