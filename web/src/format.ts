/** Small display helpers shared by the views: short ids, times, points. */

export function shortId(id: string | null | undefined, length = 8): string {
  if (!id) return "—";
  return id.length > length ? `${id.slice(0, length)}…` : id;
}

export function timeOf(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
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

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] as const;

/** Bytes as people read them: `25275990016` is "23.5 GiB". */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n) || n < 0) return "—";
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${BYTE_UNITS[unit]}`;
}

/** How long ago, coarsely ("12 s ago", "3 min ago", "2 h ago", "4 d ago"); the exact time goes in a title. */
export function ago(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined) return "—";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** A part of a whole as a whole percentage ("88 %"), or "—" when the whole is unknown. */
export function percent(part: number | null | undefined, whole: number | null | undefined): string {
  if (part === null || part === undefined || !whole) return "—";
  return `${Math.round((part / whole) * 100)} %`;
}
