/**
 * Describe output (issue 36 item 9): what a `status` verb prints for people, made from the very document `-o json`
 * prints, so the two cannot drift apart and read the same locally and through a server. One `Key: value` line per
 * field, keys aligned within their block, a nested object as an indented block under its key, a list of objects as
 * `-` items; no JSON in the text. Times kept as `…_ms` in the document read as ISO 8601 (UTC), an empty value as `-`.
 * docs/cli.md "Describe output" documents the documents.
 */

const ACRONYMS: Readonly<Record<string, string>> = {
  id: "ID",
  pid: "PID",
  ms: "ms",
  cpu: "CPU",
  usec: "µs",
  uid: "UID",
  ip: "IP",
  sha256: "SHA-256",
};

/** `instance_id` → `Instance ID`, `started_ms` (a time) → `Started`, `deletionMarked` → `Deletion marked`. */
export function describeKey(key: string, isTime = false): string {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .split(/[_\s-]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
  if (isTime && words.at(-1) === "ms") words.pop();
  const spelled = words.map((w) => ACRONYMS[w] ?? w);
  const first = spelled[0] ?? key;
  return [
    first === first.toLowerCase() ? first.charAt(0).toUpperCase() + first.slice(1) : first,
    ...spelled.slice(1),
  ].join(" ");
}

const isTimeField = (key: string, value: unknown) =>
  /(^|_)ms$/.test(key) && typeof value === "number" && value > 946_684_800_000;

function scalar(key: string, value: unknown): string {
  if (value === null || value === undefined || value === "") return "-";
  if (isTimeField(key, value)) return new Date(value as number).toISOString();
  if (typeof value === "string") return value;
  return String(value);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** One object's fields as lines, its keys padded to the widest of its own one-line fields. */
function linesOf(doc: Record<string, unknown>, indent: number, out: string[]): void {
  const entries = Object.entries(doc).filter(([, v]) => v !== undefined);
  const oneLine = (v: unknown) =>
    !(isPlainObject(v) && Object.keys(v).length > 0) &&
    !(Array.isArray(v) && v.some((x) => isPlainObject(x) || Array.isArray(x)));
  const labels = entries.map(([key, value]) => describeKey(key, isTimeField(key, value)));
  const width = Math.max(0, ...entries.map(([, v], i) => (oneLine(v) ? (labels[i] as string).length + 1 : 0)));
  const pad = " ".repeat(indent);
  entries.forEach(([key, value], i) => {
    const label = labels[i] as string;
    if (oneLine(value)) {
      const text = Array.isArray(value)
        ? value.length === 0
          ? "-"
          : value.map((v) => scalar(key, v)).join(", ")
        : isPlainObject(value)
          ? "-"
          : scalar(key, value);
      out.push(`${pad}${`${label}:`.padEnd(width + 1)}${text}`);
      return;
    }
    out.push(`${pad}${label}:`);
    if (isPlainObject(value)) {
      linesOf(value, indent + 2, out);
      return;
    }
    for (const item of value as unknown[]) {
      const inner: string[] = [];
      if (isPlainObject(item)) linesOf(item, indent + 4, inner);
      else
        inner.push(
          `${" ".repeat(indent + 4)}${Array.isArray(item) ? item.map((v) => scalar(key, v)).join(", ") : scalar(key, item)}`,
        );
      // An item's first line carries its dash, two columns in from the key.
      out.push(...inner.map((line, j) => (j === 0 ? `${" ".repeat(indent + 2)}- ${line.slice(indent + 4)}` : line)));
    }
  });
}

/** A document as describe text: aligned `Key: value` lines, nested blocks indented. */
export function describeText(doc: Record<string, unknown>): string {
  const out: string[] = [];
  linesOf(doc, 0, out);
  return out.join("\n");
}
