/**
 * What a request must be before any route sees it (issue 12, Critical; docs/security.md): the checks that run first,
 * in this order, each refusing with its own status and code before the token is even looked at.
 *
 *   request target ── not origin-form (absolute `http://x/…`, authority `x:443`, `*`, a `#fragment`) ─▶ 400
 *                  ── a percent-encoded unreserved character (`/%61pi`) or an undecodable escape   ─▶ 400
 *   Host           ── not this server's name (DNS rebinding: the page's own name)                  ─▶ 421
 *
 * Then app.ts authenticates from the matched route's own config (never from the URL text), and only then is a body
 * read: `application/json` only (415), at most the body limit (413). Pure functions: the shell gives them the raw
 * target, the Host header and the names it listens under.
 */

export interface EdgeRefusal {
  readonly status: 400 | 421;
  readonly code: "bad_request_target" | "non_canonical_path" | "misdirected_host";
  readonly message: string;
}

/** RFC 3986 §2.3: these never need escaping, so an escaped one is only ever a second spelling of the same path. */
const ESCAPED_UNRESERVED = /%(?:[46][1-9A-Fa-f]|[57][0-9Aa]|3[0-9]|2[DEde]|5[Ff]|7[Ee])/;

/** Origin-form only (RFC 9112 §3.2.1): `/path[?query]`, one spelling of each path. */
export function checkRequestTarget(target: string): EdgeRefusal | null {
  if (!target.startsWith("/") || target.startsWith("//") || target.includes("#")) {
    return {
      status: 400,
      code: "bad_request_target",
      message:
        "the request target must be a path (origin-form, `GET /api/v1/nodes`); absolute-form, authority-form, `*` and fragments are refused",
    };
  }
  const path = target.split("?", 1)[0] ?? "";
  let undecodable = false;
  try {
    decodeURIComponent(path);
  } catch {
    undecodable = true;
  }
  if (undecodable || ESCAPED_UNRESERVED.test(path)) {
    return {
      status: 400,
      code: "non_canonical_path",
      message:
        "the path spells a character with a percent escape that is never needed (or cannot be decoded); send the path as written in the API document",
    };
  }
  return null;
}

export interface HostPolicy {
  /** Lowercase names and IP literals (IPv6 in brackets) this server answers to. */
  readonly names: ReadonlySet<string>;
  /** The port it listens on; null before it listens (fastify's inject), when only the name is checked. */
  readonly port: () => number | null;
}

/** `[::1]`, `127.0.0.1`, `localhost`, the listen address itself, and every `--allowed-host` name. */
export function hostNames(listenHost: string, extra: readonly string[] = []): Set<string> {
  const bracket = (h: string) => (h.includes(":") && !h.startsWith("[") ? `[${h}]` : h);
  return new Set(["localhost", "127.0.0.1", "[::1]", listenHost, ...extra].map((h) => bracket(h.toLowerCase())));
}

/** The Host header names this server: a listed name, and the listen port if a port is given. */
export function checkHost(header: string | undefined, policy: HostPolicy): EdgeRefusal | null {
  const m = header === undefined ? null : /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(header);
  const port = policy.port();
  const ok =
    m !== null &&
    policy.names.has((m[1] as string).toLowerCase()) &&
    (m[2] === undefined || port === null || Number(m[2]) === port);
  if (ok) return null;
  return {
    status: 421,
    code: "misdirected_host",
    message:
      "the Host header does not name this server (a page under another name cannot talk to it); use its listen address or localhost, or start it with --allowed-host NAME",
  };
}

/**
 * Sent on every answer. The API's JSON is never a document to render; the dashboard loads only its own files and
 * talks only to this origin, and no page may frame either (clickjacking).
 */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function securityHeaders(dashboard: boolean): Record<string, string> {
  return {
    "x-frame-options": "DENY",
    "content-security-policy": dashboard ? DASHBOARD_CSP : API_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
  };
}
