import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { callIdOf, forwardWrite, mayForwardToken } from "./forward.js";

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function leader(handle: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString("utf8");
    });
    req.on("end", () => handle(req, body, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const CALL_ID = "0123456789abcdef0123456789abcdef";

const request = (leaderUrl: string, stillLeads: () => Promise<boolean> = async () => true) => ({
  leaderUrl,
  method: "POST",
  target: "/api/v1/placements?x=1",
  authorization: "Bearer caller-token",
  contentType: "application/json",
  body: '{"name":"a"}',
  via: "pid 1 on follower",
  callId: CALL_ID,
  stillLeads,
  pollMs: 20,
});

describe("a follower forwards a write to the leader named now (issue 37, F3)", () => {
  it("the leader's answer is relayed as it is, and the leader sees the caller's own credentials, body and path, marked forwarded", async () => {
    let seen: { url?: string; auth?: string; by?: string; call?: string; body?: string } = {};
    const url = await leader((req, body, res) => {
      seen = {
        url: req.url,
        auth: req.headers.authorization,
        by: req.headers["x-berth-forwarded-by"] as string,
        call: req.headers["x-berth-call-id"] as string,
        body,
      };
      res.writeHead(201, { "content-type": "application/json", "retry-after": "2" }).end('{"placed":true}');
    });
    const out = await forwardWrite(request(url));
    expect(out).toEqual({
      kind: "answered",
      status: 201,
      contentType: "application/json",
      body: '{"placed":true}',
      retryAfter: "2",
    });
    expect(seen).toEqual({
      url: "/api/v1/placements?x=1",
      auth: "Bearer caller-token",
      by: "pid 1 on follower",
      call: CALL_ID,
      body: '{"name":"a"}',
    });
  });

  it("a leader that cannot be connected to never got the write: not sent (the caller may send it again)", async () => {
    const url = await leader(() => undefined);
    const closed = servers.pop() as Server;
    await new Promise((r) => closed.close(r));
    expect((await forwardWrite(request(url))).kind).toBe("not_sent");
  });

  it("a leader that took the write and stops answering while the store stops naming it: lost, never 'nothing was done'", async () => {
    let arrived = false;
    const url = await leader(() => {
      arrived = true; // and never answers: a frozen leader
    });
    let polls = 0;
    const out = await forwardWrite(
      request(url, async () => {
        polls++;
        return !arrived || polls < 3;
      }),
    );
    expect(arrived).toBe(true);
    expect(out.kind).toBe("lost");
  });

  it.each([
    ["https to another host", "https://ctl-b.example:7420", true, true],
    ["plain HTTP on this machine", "http://127.0.0.1:7420", true, true],
    [
      "plain HTTP to another host from a TLS server: the caller's token would leave in clear",
      "http://10.0.0.2:7420",
      true,
      false,
    ],
    [
      "plain HTTP to another host from a plain-HTTP server: no more exposed than the caller's own request",
      "http://10.0.0.2:7420",
      false,
      true,
    ],
  ] as const)(
    "the caller's token is forwarded only where it is no more exposed (issue 33 item 14): %s",
    (_name, url, tls, ok) => {
      expect(mayForwardToken(url, tls)).toBe(ok);
    },
  );
});

describe("the call id a leader records a write under (issue 37: what names a leader_lost write)", () => {
  const fresh = () => "f".repeat(32);
  it("is the forwarding follower's when the request is forwarded and the id well formed, else a fresh one", () => {
    expect(callIdOf({ "x-berth-forwarded-by": "pid 1", "x-berth-call-id": CALL_ID }, fresh)).toBe(CALL_ID);
    expect(callIdOf({ "x-berth-call-id": CALL_ID }, fresh)).toBe(fresh());
    expect(callIdOf({ "x-berth-forwarded-by": "pid 1", "x-berth-call-id": "not-hex" }, fresh)).toBe(fresh());
    expect(callIdOf({ "x-berth-forwarded-by": "pid 1" }, fresh)).toBe(fresh());
  });
});
