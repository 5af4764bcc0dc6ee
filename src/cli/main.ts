#!/usr/bin/env node
/**
 * Kept for what names the old path: unit files and aliases written before issue 32 run `node dist/src/cli/main.js`.
 * The executable's entry points are in entry/ (entry/main.ts); this only hands over to it.
 */
await import("./entry/main.js");
