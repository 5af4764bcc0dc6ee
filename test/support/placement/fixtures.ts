/**
 * Test fixtures for the placement engine: small builders that produce *valid* inputs (they go through the same
 * schema as production input), so a test states only what it is about. Used by the tests beside each stage and
 * by the benchmark; never by production code.
 */
import type { z } from "zod";
import type { NodeId } from "../../../src/core/crypto/ed25519.js";
import {
  type nodeFactsSchema,
  type NodeView,
  type PlacementInput,
  placementInputSchema,
  type placementRequestSchema,
  type workloadSpecSchema,
} from "../../../src/core/placement/inputs.js";

export type FactsDraft = z.input<typeof nodeFactsSchema>;
export type SpecDraft = z.input<typeof workloadSpecSchema>;
export type RequestDraft = z.input<typeof placementRequestSchema>;

/** A readable test id: `nid(1)` = `00000000000000000000000000000001`. Real ids come from `nodeIdOf(key)`. */
export function nid(n: number): NodeId {
  return n.toString(16).padStart(32, "0") as NodeId;
}

export const NOW = 1_767_225_600_000;
export const PACKAGE_ID = "3f9c2a".padEnd(64, "0");

export function factsFor(id: NodeId, over: Partial<FactsDraft> = {}): FactsDraft {
  return {
    node_id: id,
    issued_at_ms: NOW - 1_000,
    name: `node-${Number.parseInt(id, 16)}`,
    os: "linux",
    arch: "aarch64",
    board: "pi5",
    cpu: { count: 4, model: "Cortex-A76", load1_milli: 0 },
    memory: { total_bytes: 8 * 2 ** 30, available_bytes: 4 * 2 ** 30 },
    routes: [{ route: "native", arches: [over.arch ?? "aarch64"] }],
    ...over,
  };
}

export interface NodeDraft {
  readonly node_id: NodeId;
  readonly tier?: NodeView["tier"];
  readonly liveness?: NodeView["liveness"];
  readonly facts?: FactsDraft | null;
  readonly facts_expire_at_ms?: number;
}

/** An alive, paired node with fresh pi5 aarch64 facts unless told otherwise. */
export interface NodeOverrides {
  readonly tier?: NodeView["tier"];
  readonly liveness?: NodeView["liveness"];
  /** Merged over the default facts; `null` for a node without accepted facts. */
  readonly facts?: Partial<FactsDraft> | null;
  readonly facts_expire_at_ms?: number;
}

export function nodeDraft(id: NodeId, over: NodeOverrides = {}): NodeDraft {
  const { facts, ...rest } = over;
  return {
    node_id: id,
    tier: "paired" as const,
    liveness: "alive" as const,
    facts: facts === null ? null : factsFor(id, facts ?? {}),
    facts_expire_at_ms: NOW + 300_000,
    ...rest,
  };
}

export function specDraft(over: Partial<SpecDraft> = {}): SpecDraft {
  return {
    name: "triage",
    kind: "agent",
    package_id: PACKAGE_ID,
    variants: [{ id: "aarch64-linux", arch: "aarch64", os: "linux", entry: { program: "bin/agent-aarch64" } }],
    ...over,
  };
}

export interface InputDraft {
  readonly nodes: NodeDraft[];
  readonly spec?: Partial<SpecDraft>;
  readonly request?: Partial<Omit<RequestDraft, "spec">>;
  readonly cluster?: Partial<z.input<typeof placementInputSchema>["cluster"]>;
  /** Gate verdicts default to permit for every listed node. */
  readonly permitAll?: boolean;
}

export function inputOf(draft: InputDraft): PlacementInput {
  const gate: Record<string, { verdict: "permit" | "deny"; reason: string }> = {};
  if (draft.permitAll !== false)
    for (const n of draft.nodes) gate[n.node_id] = { verdict: "permit", reason: "test-agent" };
  return placementInputSchema.parse({
    request: { spec: specDraft(draft.spec), gate, ...draft.request },
    nodes: draft.nodes,
    cluster: { now_ms: NOW, ...draft.cluster },
  });
}
