/**
 * Issue 36's `-l SELECTOR` over the agent registry: one rule for the live list (status.ts) and the stored one
 * (stored-states.ts), so both answer the same agents.
 */
import { type Requirement, selects } from "../core/agents/labels.js";
import type { AgentRecord } from "./registry.js";
import { specFromText } from "./spec-file.js";

/** The records whose spec's `metadata.labels` the selector selects (all of them for an empty selector). */
export function selectedRecords(
  records: readonly AgentRecord[],
  selector: readonly Requirement[],
): readonly AgentRecord[] {
  if (selector.length === 0) return records;
  return records.filter((r) => {
    const loaded = specFromText(r.spec_text, r.spec_path);
    return selects(selector, loaded.ok ? (loaded.value.spec.metadata.labels ?? {}) : {});
  });
}
