/**
 * The dashboard's files (`dist/web/`, built by Vite) at `/`: a known file with its content type, `index.html` for any
 * other non-API path (the dashboard routes in the browser), and never a file outside the folder. Without a build, `/`
 * says how to make one.
 */
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { extname, join, resolve, sep } from "node:path";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

export type StaticAnswer = { status: number; type: string; body: Buffer | string; cache: string };

export const NOT_BUILT_PAGE = `<!doctype html><meta charset="utf-8"><title>berth</title>
<h1>berth</h1><p>The dashboard is not built. Build it with <code>npx vite build web</code> (or run <code>bash scripts/test</code>, which builds it into <code>dist/web/</code>), then reload.</p>
<p>The API answers at <code>/api/v1</code>; its document is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</p>`;

/** Resolves a URL path inside `root`; null for anything that would leave it (`..`, encoded or not, NUL, symlinks out). */
export function resolveInside(root: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath.split("?")[0] ?? "");
  } catch {
    return null;
  }
  if (decoded.includes("\0") || decoded.includes("\\")) return null;
  if (decoded.split("/").some((part) => part === "..")) return null;
  const full = resolve(root, `.${decoded.startsWith("/") ? decoded : `/${decoded}`}`);
  const rootReal = realpathSync(root);
  if (full !== resolve(root) && !full.startsWith(`${resolve(root)}${sep}`)) return null;
  if (!existsSync(full)) return full;
  const real = realpathSync(full);
  return real === rootReal || real.startsWith(`${rootReal}${sep}`) ? real : null;
}

export function serveStatic(root: string, urlPath: string): StaticAnswer {
  const index = join(root, "index.html");
  if (!existsSync(index))
    return { status: 200, type: "text/html; charset=utf-8", body: NOT_BUILT_PAGE, cache: "no-store" };
  const path = resolveInside(root, urlPath);
  if (path === null) return { status: 404, type: "text/plain; charset=utf-8", body: "not found\n", cache: "no-store" };
  if (existsSync(path) && statSync(path).isFile()) {
    const type = TYPES[extname(path)] ?? "application/octet-stream";
    // Vite's hashed assets never change under their name; index.html must always be fetched fresh.
    const cache = path.includes(`${sep}assets${sep}`) ? "public, max-age=31536000, immutable" : "no-cache";
    return { status: 200, type, body: readFileSync(path), cache };
  }
  // A missing asset is a 404 (a stale script tag should fail loudly); any other path is a dashboard route.
  if (extname(urlPath.split("?")[0] ?? "") !== "")
    return { status: 404, type: "text/plain; charset=utf-8", body: "not found\n", cache: "no-store" };
  return { status: 200, type: TYPES[".html"] as string, body: readFileSync(index), cache: "no-cache" };
}
