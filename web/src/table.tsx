/**
 * A list that stays usable with thousands of rows: a filter box (one lowercase search text per row, computed once per
 * list, so a keystroke is one linear scan) and pages of PAGE_SIZE rows, so the DOM holds at most one page whatever
 * the list's length.
 */
import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";

export const PAGE_SIZE = 50;

export interface Column<T> {
  readonly header: string;
  readonly cell: (row: T) => ComponentChildren;
}

interface Props<T> {
  /** Names the table and its filter box for people and assistive technology ("instances", "nodes"…). */
  readonly label: string;
  readonly rows: readonly T[];
  readonly columns: readonly Column<T>[];
  readonly rowKey: (row: T) => string;
  /** The text a filter matches against; every column's plain values, usually. */
  readonly searchText: (row: T) => string;
  readonly empty: string;
}

export function FilteredTable<T>({ label, rows, columns, rowKey, searchText, empty }: Props<T>) {
  const [filter, setFilter] = useState("");
  const [page, setPage] = useState(0);
  const haystacks = useMemo(() => rows.map((row) => searchText(row).toLowerCase()), [rows, searchText]);
  const matching = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    if (needle === "") return rows;
    return rows.filter((_, i) => haystacks[i]?.includes(needle));
  }, [rows, haystacks, filter]);
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const shown = matching.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  const first = matching.length === 0 ? 0 : current * PAGE_SIZE + 1;

  return (
    <div class="table-block">
      <div class="table-tools">
        <label>
          Filter {label}{" "}
          <input
            type="search"
            value={filter}
            onInput={(e) => {
              setFilter(e.currentTarget.value);
              setPage(0);
            }}
          />
        </label>
        <span role="status" aria-live="polite">
          {matching.length === rows.length
            ? `${rows.length} ${label}`
            : `${matching.length} of ${rows.length} ${label}`}
        </span>
      </div>
      {matching.length === 0 ? (
        <p class="empty">{rows.length === 0 ? empty : `No ${label} match “${filter}”.`}</p>
      ) : (
        <table aria-label={label}>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col" key={c.header}>
                  {c.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((row) => (
              <tr key={rowKey(row)}>
                {columns.map((c) => (
                  <td key={c.header}>{c.cell(row)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pages > 1 && (
        <nav class="pager" aria-label={`${label} pages`}>
          <button type="button" disabled={current === 0} onClick={() => setPage(current - 1)}>
            Previous page
          </button>
          <span>
            {first}–{first + shown.length - 1} of {matching.length} (page {current + 1} of {pages})
          </span>
          <button type="button" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
            Next page
          </button>
        </nav>
      )}
    </div>
  );
}

/** A plain table's header row, for the small fixed tables that need no filter or pages. */
export function TableHead({ columns }: { columns: readonly string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th scope="col" key={c}>
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}
