/**
 * The CLI's side of the HTTP API (src/server/contract.ts): one request, its JSON answer, and every way it can fail
 * named for people. Plain `node:http`/`node:https`, so a remote verb loads neither fastify nor SQLite.
 *
 * TLS trust, per context: the system's CAs by default; `ca` (a CA, or the server's own self-signed certificate, as
 * PEM) replaces them; `pinSha256` requires the server's certificate to have exactly that SHA-256 fingerprint, checked
 * after the handshake and before a byte of the request (the token) is written. A pin alone trusts that certificate
 * whoever signed it; a pin with a CA requires both.
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import type { Duplex } from "node:stream";
import { CliError } from "../errors.js";

export interface ServerTarget {
  /** `http(s)://host:port`, no trailing slash. */
  readonly url: string;
  readonly token: string;
  readonly ca?: Buffer;
  readonly pinSha256?: string;
  /** How the CLI found it, for messages: `context prod`, `BERTH_ADDR`, `the berth serve of this home (pid 42)`. */
  readonly via: string;
}

export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
  /** Issue 37: the answer's Retry-After, in seconds, when it carries one (a follower with no leader to forward to). */
  readonly retryAfterS?: number;
}

export const API_BASE = "/api/v1";

const fingerprintOf = (socket: TLSSocket) =>
  (socket.getPeerCertificate()?.fingerprint256 ?? "").replace(/:/g, "").toLowerCase();

function requestOptions(
  t: ServerTarget,
  method: string,
  path: string,
  headers: Record<string, string>,
): RequestOptions {
  const u = new URL(t.url);
  const base: RequestOptions = {
    method,
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port || (u.protocol === "https:" ? 443 : 80),
    path,
    headers,
  };
  if (u.protocol !== "https:") return { ...base, agent: false };
  const servername = /^[\d.]+$|:/.test(u.hostname) ? undefined : u.hostname;
  const tlsOptions = {
    host: base.host as string,
    port: Number(base.port),
    ...(servername ? { servername } : {}),
    ...(t.ca ? { ca: t.ca } : {}),
    rejectUnauthorized: t.pinSha256 === undefined || t.ca !== undefined,
  };
  // No agent: node:http then uses exactly this connection (an agent, even `agent: false`, would open its own).
  return {
    ...base,
    // The connection is handed to the request only once the certificate passed: nothing is sent to a wrong server.
    createConnection: (_opts: unknown, ready: (error: Error | null, socket: Duplex) => void) => {
      const socket = tlsConnect(tlsOptions);
      socket.once("secureConnect", () => {
        if (t.pinSha256 !== undefined && fingerprintOf(socket) !== t.pinSha256) {
          socket.destroy();
          ready(
            new CliError(
              `the server at ${t.url} presented a certificate with SHA-256 ${fingerprintOf(socket)}, not the pinned ${t.pinSha256} (${t.via}); nothing was sent. If the server's certificate was renewed on purpose, update the context with \`berth context add NAME --server URL --pin-sha256 NEW …\``,
              1,
              { kind: "refused" },
            ),
            socket,
          );
          return;
        }
        ready(null, socket);
      });
      socket.once("error", (error) => ready(error, socket));
      return undefined;
    },
  } as RequestOptions;
}

const NETWORK = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "ECONNRESET",
  "EAI_AGAIN",
  "ENOTFOUND",
  "EPIPE",
]);

function failure(t: ServerTarget, error: Error): CliError {
  if (error instanceof CliError) return error;
  const code = (error as NodeJS.ErrnoException).code ?? "";
  if (NETWORK.has(code)) {
    return new CliError(
      `the berth server at ${t.url} did not answer (${code}; ${t.via}); check that \`berth serve\` runs there and listens on that address, or run the verb on this machine's files with --local`,
      1,
      { kind: "unreachable" },
    );
  }
  if (/CERT|SSL|TLS|self.signed|certificate/i.test(`${code} ${error.message}`)) {
    return new CliError(
      `the TLS certificate of ${t.url} is not trusted (${code || error.message}; ${t.via}); give the context the server's CA or certificate with --ca-file FILE, or pin it with --pin-sha256 HEX`,
      1,
      { kind: "refused" },
    );
  }
  return new CliError(`the request to ${t.url} failed: ${error.message} (${t.via})`, 1, { kind: "unreachable" });
}

/** Sends one request and reads the whole answer as JSON (or text when it is not JSON). */
export function apiRequest(
  t: ServerTarget,
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = {
    authorization: `Bearer ${t.token}`,
    accept: "application/json",
    ...(payload ? { "content-type": "application/json", "content-length": String(payload.length) } : {}),
  };
  const options = requestOptions(t, method, `${API_BASE}${path}`, headers);
  return new Promise((resolve, reject) => {
    const req = httpRequest(options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", (e) => reject(failure(t, e)));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let parsed: unknown = text;
        try {
          parsed = text === "" ? null : JSON.parse(text);
        } catch {
          // an answer that is not JSON (a proxy's error page): kept as text for the message
        }
        const retryAfter = Number(res.headers["retry-after"]);
        resolve({
          status: res.statusCode ?? 0,
          body: parsed,
          ...(Number.isInteger(retryAfter) && retryAfter >= 0 ? { retryAfterS: retryAfter } : {}),
        });
      });
    });
    req.on("error", (e) => reject(failure(t, e)));
    req.end(payload);
  });
}
