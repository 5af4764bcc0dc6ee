/**
 * The API under attack, from outside: a real listener on a real socket (`startServer` in a temp berth home), requests
 * written byte for byte on a raw `net` socket (fetch would normalise the target, the Host and the body's type), and
 * the controller's chain read through a separate read-only connection — never through the server under test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningServer, type ServerOptions, startServer } from "../../src/server/server.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { notConfigured } from "../server/support.js";

export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** The body as JSON, or null. */
  readonly json: { error?: { code?: string } } & Record<string, unknown>;
}

export interface Target {
  readonly server: RunningServer;
  readonly dir: string;
  readonly port: number;
  /** `127.0.0.1:<port>`, the Host a legitimate client sends. */
  readonly host: string;
  /** Sends `head` (request line and headers, without the blank line) and `body`; Connection: close is added. */
  raw(head: string, body?: string): Promise<RawAnswer>;
  /** Every event on the controller chain, from a read-only connection. */
  chain(): Array<{ seq: number; source: string; kind: string; payload: string }>;
  close(): Promise<void>;
}

export async function hostileTarget(o: Partial<ServerOptions> = {}): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), "berth-hostile-"));
  const server = await startServer({ dataDir: dir, port: 0, logLevel: "silent", kubernetes: notConfigured, ...o });
  const port = Number(new URL(server.url).port);
  return {
    server,
    dir,
    port,
    host: `127.0.0.1:${port}`,
    raw: (head, body = "") => rawRequest(port, head, body),
    chain() {
      const db = openDatabase(join(dir, "controller.db"), { readonly: true });
      try {
        return db.prepare("SELECT seq, source, kind, payload FROM audit_event ORDER BY seq").all() as Array<{
          seq: number;
          source: string;
          kind: string;
          payload: string;
        }>;
      } finally {
        db.close();
      }
    },
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function rawRequest(port: number, head: string, body = ""): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => {
      const length = body === "" ? "" : `Content-Length: ${Buffer.byteLength(body)}\r\n`;
      socket.write(
        `${head.replace(/\r?\n/g, "\r\n").replace(/(\r\n)?$/, "\r\n")}${length}Connection: close\r\n\r\n${body}`,
      );
    });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      const lines = (split < 0 ? text : text.slice(0, split)).split("\r\n");
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(":");
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const raw = split < 0 ? "" : text.slice(split + 4);
      const payload = headers["transfer-encoding"] === "chunked" ? dechunk(raw) : raw;
      let json: RawAnswer["json"] = {};
      try {
        json = JSON.parse(payload) as RawAnswer["json"];
      } catch {
        json = {};
      }
      resolve({ status, headers, body: payload, json });
    });
  });
}

function dechunk(text: string): string {
  let out = "";
  let rest = text;
  for (;;) {
    const nl = rest.indexOf("\r\n");
    const size = Number.parseInt(rest.slice(0, nl), 16);
    if (!(size > 0)) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}
