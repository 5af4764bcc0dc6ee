/** Regenerates docs/api/openapi.json from the route schemas: `node dist/src/server/openapi-write.js [repo root]`. */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { berthVersion } from "../version.js";
import { OPENAPI_FILE, openApiText } from "./openapi.js";

const root = resolve(process.argv[2] ?? fileURLToPath(new URL("../../../", import.meta.url)));
const path = join(root, OPENAPI_FILE);
writeFileSync(path, openApiText(berthVersion()));
process.stdout.write(`wrote ${path}\n`);
