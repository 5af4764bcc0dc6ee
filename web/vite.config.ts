/**
 * The dashboard's build: Vite's own JSX transform (Oxc) set to Preact's automatic runtime, so no React preset and
 * no babel. `scripts/build-web` runs it; the server serves the output folder `dist/web/` at `/`.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  // The server mounts the dashboard at `/`; relative asset URLs keep it working behind any prefix too.
  base: "./",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/web/", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: true,
  },
  logLevel: "warn",
});
