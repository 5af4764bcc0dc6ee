/** The built dashboard the browser tests load: `dist/web/`, made by scripts/build-web (bash scripts/test runs it). */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../support/built.js";

export function builtDashboard(): string {
  const root = join(repoRoot, "dist", "web");
  if (!existsSync(join(root, "index.html")))
    throw new Error("the dashboard is not built: run scripts/build-web (bash scripts/test does)");
  return root;
}
