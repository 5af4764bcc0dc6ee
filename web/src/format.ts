/** Small display helpers shared by the views: short ids, times, points. */

export function shortId(id: string | null | undefined, length = 8): string {
  if (!id) return "—";
  return id.length > length ? `${id.slice(0, length)}…` : id;
}

export function timeOf(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** `_centi` values are hundredths of a point (src/core/placement/outputs.ts). */
export function points(centi: number | null | undefined): string {
  if (centi === null || centi === undefined) return "—";
  return (centi / 100).toFixed(2);
}

/** An error as the API gave it; the message is the server's own. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
