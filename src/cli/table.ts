/**
 * Aligned tables for lists, the way kubectl prints them: an upper-case header, columns padded with two spaces,
 * no trailing blanks. Padding is computed on the plain text, then each cell is painted, so colour never shifts a
 * column.
 */
import type { Palette } from "./style.js";

export interface TableOptions {
  readonly palette?: Palette;
  /** Paints one body cell (already known by its column index); the header is always bold. */
  readonly paint?: (column: number, text: string) => string;
}

export function renderTable(
  head: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  options: TableOptions = {},
): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[], paint: (column: number, text: string) => string) =>
    cells
      .map((cell, i) => {
        const padding = i === cells.length - 1 ? "" : " ".repeat((widths[i] ?? 0) - cell.length);
        return `${paint(i, cell)}${padding}`;
      })
      .join("  ")
      .trimEnd();
  const bold = options.palette?.bold ?? ((text: string) => text);
  const body = options.paint ?? ((_column: number, text: string) => text);
  return [line(head, (_i, text) => bold(text)), ...rows.map((r) => line(r, body))].join("\n");
}
