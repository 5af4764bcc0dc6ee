/** Writes docs/agent-spec.md and docs/agent-spec.schema.json from the schema (issue 36): `node dist/src/agents/spec-doc-write.js`. */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { agentSpecJsonSchema, agentSpecMarkdown } from "../core/agents/spec-doc.js";

const docs = fileURLToPath(new URL("../../../docs/", import.meta.url));
writeFileSync(`${docs}agent-spec.md`, agentSpecMarkdown());
writeFileSync(`${docs}agent-spec.schema.json`, `${JSON.stringify(agentSpecJsonSchema(), null, 2)}\n`);
process.stdout.write(`wrote ${docs}agent-spec.md and ${docs}agent-spec.schema.json\n`);
