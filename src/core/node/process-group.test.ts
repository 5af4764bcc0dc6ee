import { describe, expect, it } from "vitest";
import { groupMembers, type ProcRow } from "./process-group.js";

const leader: ProcRow = { pid: 100, pgrp: 100, state: "S", startMarker: "5000" };
const entry: ProcRow = { pid: 101, pgrp: 100, state: "S", startMarker: "5001" };
const child: ProcRow = { pid: 102, pgrp: 100, state: "S", startMarker: "5002" };
const stranger: ProcRow = { pid: 300, pgrp: 300, state: "S", startMarker: "10" };
const id = { pid: 100, start_marker: "5000" };

describe("the members of an instance's process group", () => {
  it("are the leader and everything it started in the group", () => {
    expect(groupMembers([leader, entry, child, stranger], id).map((r) => r.pid)).toEqual([100, 101, 102]);
  });
  it("outlive the leader: with the wrapper killed, the entry and its child still make the instance alive", () => {
    expect(groupMembers([entry, child, stranger], id).map((r) => r.pid)).toEqual([101, 102]);
  });
  it("exclude zombies", () => {
    expect(
      groupMembers(
        [
          { ...leader, state: "Z" },
          { ...child, state: "Z" },
        ],
        id,
      ),
    ).toEqual([]);
  });
  it("are none when the leader's pid now belongs to another process (the group id was reused)", () => {
    const reused: ProcRow = { pid: 100, pgrp: 100, state: "S", startMarker: "9999" };
    expect(groupMembers([reused, { pid: 105, pgrp: 100, state: "S", startMarker: "10000" }], id)).toEqual([]);
  });
  it("are none when no process is in the group", () => {
    expect(groupMembers([stranger], id)).toEqual([]);
  });
});
