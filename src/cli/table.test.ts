import { describe, expect, it } from "vitest";
import { palette } from "./style.js";
import { renderTable } from "./table.js";

const strip = (text: string) => text.replace(new RegExp(`${String.fromCharCode(27)}\\[\\d+m`, "g"), "");

describe("tables", () => {
  const head = ["NAME", "STATE", "NOTE"];
  const rows = [
    ["heartbeat", "running", ""],
    ["a-much-longer-name", "unreachable", "next deploy: observe"],
  ];

  it("pads every column to its widest cell, two spaces apart, with no trailing blanks", () => {
    expect(renderTable(head, rows)).toBe(
      [
        "NAME                STATE        NOTE",
        "heartbeat           running",
        "a-much-longer-name  unreachable  next deploy: observe",
      ].join("\n"),
    );
  });

  it("colour never shifts a column: painted and plain tables read the same once the colour is taken out", () => {
    const p = palette(true);
    const painted = renderTable(head, rows, {
      palette: p,
      paint: (column, text) => (column === 1 ? p.green(text) : text),
    });
    expect(painted).not.toBe(renderTable(head, rows));
    expect(strip(painted)).toBe(renderTable(head, rows));
  });
});
