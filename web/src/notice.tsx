/** How the views report an API error (with the server's message) and the outcome of an action. */
import type { ComponentChildren } from "preact";
import { errorText } from "./format";

export function ErrorNotice({ error, action }: { error: unknown; action?: string }) {
  if (error === null || error === undefined) return null;
  return (
    <div class="error" role="alert">
      {action ? <strong>{action} failed: </strong> : null}
      <span class="message">{errorText(error)}</span>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** A resource's error (with the server's message), its data once loaded, or a loading line until then. */
export function Loaded<T>({
  resource,
  what,
  children,
}: {
  resource: { data: T | null; error: Error | null };
  what: string;
  children: (data: T) => ComponentChildren;
}) {
  return (
    <>
      <ErrorNotice error={resource.error} action={`Loading ${what}`} />
      {resource.data !== null ? children(resource.data) : resource.error ? null : <Loading what={what} />}
    </>
  );
}
