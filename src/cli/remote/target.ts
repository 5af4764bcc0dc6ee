/**
 * Where a verb's controller is (issue 13 contexts, issue 21 one writer): decided once per invocation, in this order —
 *
 *   1. `--local`                                  this machine's files, whatever else is configured
 *   2. `BERTH_ADDR` (+ `BERTH_TOKEN` or `BERTH_TOKEN_FILE`, `BERTH_CACERT`, `BERTH_PIN_SHA256`)   that server
 *   3. `BERTH_CONTEXT`, else the current context of contexts.json  — unless `--data-dir` was given: a home named on
 *      the command line is a home on this machine
 *   4. a `berth serve` / `berth up` running on the home (serve.json, see serve-file.ts)              that server
 *   5. the home's files, as before contexts existed
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { CliError } from "../errors.js";
import { berthHome } from "../paths.js";
import type { Context } from "./contexts.js";
import type { ServerTarget } from "./http.js";
import { findLocalServer } from "./serve-file.js";

export type ControllerTarget =
  | { readonly kind: "local"; readonly home: string }
  | { readonly kind: "server"; readonly server: ServerTarget; readonly sameHost: boolean };

export interface TargetFlags {
  readonly local?: boolean;
  readonly dataDir?: string;
  /** Whether --data-dir was typed (not the default). */
  readonly explicitHome?: boolean;
}

const TOKEN = /^[A-Za-z0-9_.~+/-]{16,512}=*$/;

/** A token file: refused when group or others can read it, as berth's own token and key files are. */
export function readTokenFile(path: string, what: string): string {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    throw new CliError(
      `token file ${path} (${what}) does not exist; copy the server's api.token there (mode 0600)`,
      2,
      { kind: "file" },
    );
  }
  if ((mode & 0o077) !== 0)
    throw new CliError(
      `token file ${path} (${what}) is readable by group or others (mode ${mode.toString(8)}); run \`chmod 600 ${path}\``,
      2,
      { kind: "permission" },
    );
  const token = readFileSync(path, "utf8").trim();
  if (!TOKEN.test(token))
    throw new CliError(
      `token file ${path} (${what}) does not hold an API token (one line of 16–512 token characters)`,
      2,
      { kind: "file" },
    );
  return token;
}

function readPem(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch {
    throw new CliError(`${what}: cannot read ${path}; give the PEM file of the server's CA or certificate`, 2, {
      kind: "file",
    });
  }
}

/**
 * Issue 33 item 14: the API token travels in every request's Authorization header, so plain HTTP to another host
 * hands it to whoever is on the path. Loopback stays allowed (it never leaves the machine). Pure.
 */
export function plainHttpBeyondMachine(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== "http:") return null;
  const host = u.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const loopback =
    host === "localhost" || host.endsWith(".localhost") || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
  return loopback ? null : u.host;
}

/** The warning printed at each use of an accepted plain-HTTP server (stderr: never in a --json document). */
function warnPlainHttp(host: string, via: string): void {
  process.stderr.write(
    `berth: warning: ${via} sends the API token over plain HTTP to ${host}: anyone on the network path can read it and act as you; serve with TLS (berth serve --tls-cert/--tls-key) and use https://\n`,
  );
}

export function contextTarget(name: string, c: Context, o: { readonly quiet?: boolean } = {}): ServerTarget {
  const via = `context ${name}`;
  const plain = plainHttpBeyondMachine(c.server);
  if (plain !== null) {
    if (c.insecure_http !== true) {
      throw new CliError(
        `${via}: ${c.server} is plain HTTP to another host, which would send the API token in clear; use https://, or add the context again with --insecure-http to accept that`,
        2,
        { kind: "refused" },
      );
    }
    if (!o.quiet) warnPlainHttp(plain, via);
  }
  return {
    url: c.server,
    token: readTokenFile(c.token_file, via),
    via,
    ...(c.ca_file ? { ca: readPem(c.ca_file, via) } : {}),
    ...(c.pin_sha256 ? { pinSha256: c.pin_sha256 } : {}),
  };
}

function envTarget(env: NodeJS.ProcessEnv): ServerTarget {
  const url = (env.BERTH_ADDR ?? "").replace(/\/+$/, "").replace(/\/api\/v1$/, "");
  if (!/^https?:\/\/[^\s/]+$/.test(url))
    throw new CliError(
      `BERTH_ADDR=${JSON.stringify(env.BERTH_ADDR)} must be a server URL such as https://controller.example:7420`,
      2,
      { kind: "usage" },
    );
  const token =
    env.BERTH_TOKEN?.trim() || (env.BERTH_TOKEN_FILE ? readTokenFile(env.BERTH_TOKEN_FILE, "BERTH_TOKEN_FILE") : "");
  if (!TOKEN.test(token))
    throw new CliError(
      "BERTH_ADDR is set but no API token is: set BERTH_TOKEN, or BERTH_TOKEN_FILE to a file holding it",
      2,
      { kind: "usage" },
    );
  const plain = plainHttpBeyondMachine(url);
  if (plain !== null) {
    if (env.BERTH_INSECURE_HTTP !== "1") {
      throw new CliError(
        `BERTH_ADDR=${url} is plain HTTP to another host, which would send the API token in clear; use https://, or set BERTH_INSECURE_HTTP=1 to accept that`,
        2,
        { kind: "refused" },
      );
    }
    warnPlainHttp(plain, "BERTH_ADDR");
  }
  const pin = env.BERTH_PIN_SHA256?.replace(/:/g, "").toLowerCase();
  if (pin !== undefined && !/^[0-9a-f]{64}$/.test(pin))
    throw new CliError(
      "BERTH_PIN_SHA256 must be a certificate's SHA-256 fingerprint (64 hex characters, colons allowed)",
      2,
      { kind: "usage" },
    );
  return {
    url,
    token,
    via: "BERTH_ADDR",
    ...(env.BERTH_CACERT ? { ca: readPem(env.BERTH_CACERT, "BERTH_CACERT") } : {}),
    ...(pin ? { pinSha256: pin } : {}),
  };
}

/** Where contexts live (contexts.ts says why); repeated here so that a home without contexts never loads zod. */
const contextsFile = (env: NodeJS.ProcessEnv) => env.BERTH_CONTEXTS ?? join(berthHome(), "contexts.json");

export async function resolveController(
  flags: TargetFlags,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ControllerTarget> {
  const home = resolve(flags.dataDir ?? berthHome());
  if (flags.local) return { kind: "local", home };
  if (env.BERTH_ADDR) return { kind: "server", server: envTarget(env), sameHost: false };
  if (!flags.explicitHome) {
    const named = env.BERTH_CONTEXT;
    if (named || existsSync(contextsFile(env))) {
      const { contextNamed, readContexts } = await import("./contexts.js");
      const file = readContexts();
      const name = named || file.current;
      if (name) return { kind: "server", server: contextTarget(name, contextNamed(file, name)), sameHost: false };
    }
  }
  const running = findLocalServer(home);
  if (running) {
    const via = `the berth serve of ${home} (pid ${running.pid}; --local to bypass it)`;
    return {
      kind: "server",
      server: {
        url: running.url,
        token: readTokenFile(join(home, "api.token"), via),
        via,
        ...(running.cert_sha256 ? { pinSha256: running.cert_sha256 } : {}),
      },
      sameHost: true,
    };
  }
  return { kind: "local", home };
}
