import { describe, expect, it } from "vitest";
import { Admission, peerAddress } from "./admission.js";

const limits = { maxConnections: 6, maxUnauthenticated: 4, maxUnauthenticatedPerAddress: 2, graceMs: 100 };

describe("connection admission", () => {
  it("a newcomer over its address's cap evicts that address's oldest unauthenticated connection", () => {
    const a = new Admission<string>(limits);
    expect(a.admit("x1", "10.0.0.1", 0)).toEqual({ kind: "admit", evict: [] });
    a.admit("x2", "10.0.0.1", 10);
    a.admit("y1", "10.0.0.2", 20);
    expect(a.admit("x3", "10.0.0.1", 200)).toEqual({ kind: "admit", evict: ["x1"] });
    expect(a.size).toBe(3);
  });

  it("a full unauthenticated pool evicts from the address holding the most, never from a lone peer", () => {
    const a = new Admission<string>({ ...limits, maxUnauthenticatedPerAddress: 10 });
    a.admit("lone", "10.0.0.9", 0);
    a.admit("x1", "10.0.0.1", 1);
    a.admit("x2", "10.0.0.1", 2);
    a.admit("x3", "10.0.0.1", 3);
    expect(a.admit("z", "10.0.0.3", 500)).toEqual({ kind: "admit", evict: ["x1"] });
  });

  it("an authenticated connection is never evicted for an unauthenticated one, even when the cap is reached", () => {
    const a = new Admission<string>({ ...limits, maxConnections: 2 });
    a.admit("ctl", "127.0.0.1", 0);
    a.authenticate("ctl");
    a.admit("x1", "127.0.0.1", 1);
    expect(a.admit("x2", "127.0.0.1", 500)).toEqual({ kind: "admit", evict: ["x1"] });
    expect(a.isAuthenticated("ctl")).toBe(true);
    a.authenticate("x2");
    expect(a.admit("x3", "127.0.0.1", 1000).kind).toBe("refuse");
    expect(a.size).toBe(2);
  });

  it("a connection inside its grace period is not evicted: the soft caps are exceeded up to the overall cap", () => {
    const a = new Admission<string>(limits);
    for (let i = 0; i < 6; i++) expect(a.admit(`x${i}`, "127.0.0.1", i)).toEqual({ kind: "admit", evict: [] });
    expect(a.admit("late", "127.0.0.1", 7).kind).toBe("refuse");
    expect(a.admit("later", "127.0.0.1", 150)).toEqual({ kind: "admit", evict: ["x0", "x1"] });
  });

  it("releasing is idempotent and frees the address's share", () => {
    const a = new Admission<string>(limits);
    a.admit("x1", "10.0.0.1", 0);
    a.release("x1");
    a.release("x1");
    expect(a.size).toBe(0);
    expect(a.unauthenticatedCount).toBe(0);
  });

  it("an IPv4-mapped IPv6 address is the same peer as its IPv4 form", () => {
    expect(peerAddress("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(peerAddress("::1")).toBe("::1");
  });
});
