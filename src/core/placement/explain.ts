/**
 * The explain rendering (spec/mesh.md §17): a decision as plain text for people, used by `berth explain` (dry run)
 * and as `PlaceReport.explain`. Every candidate is shown: eligible ones numbered in rank order with their route,
 * tier, score and breakdown; rejected ones marked `-` with one line per failed constraint. `decision_id:` and
 * `dispatch:` appear only once a decision was chained and dispatched, so both are optional here.
 *
 * Node ids are printed in full, followed by the facts name in parentheses; scores with two decimals.
 */
import type { PlacementStrategy } from "./inputs.js";
import type { NodeReport, PlacementDecision, PlacementError, ScoreBreakdown } from "./outputs.js";

/** One dispatch attempt as explain needs it (§9.5 `Attempt`, plus what the dispatcher knows of its ending). */
export interface ExplainAttempt {
  readonly node_id: string;
  readonly variant: string;
  readonly outcome: "placed" | "refused" | "unreachable" | "indeterminate" | "gate_denied";
  readonly code: string | null;
  /** For an indeterminate attempt: `<why>; <note>` (§9.4 step 5). */
  readonly reason: string | null;
  /** The chained `next` text: `trying the next candidate` or `stopped: the target may hold the instance`. */
  readonly next?: string | null;
  /** For a placed attempt: the instance id the node answered with. */
  readonly instance_id?: string | null;
}

export interface ExplainOptions {
  /** The hash of the chained decision event; omitted for a dry run. */
  readonly decision_id?: string | null;
  /** The attempts of the dispatch; omitted when nothing was dispatched. */
  readonly attempts?: readonly ExplainAttempt[] | null;
}

/** 11650 → "116.50". Centi values are non-negative integers. */
export function points(centi: number): string {
  const whole = Math.trunc(centi / 100);
  const frac = Math.abs(centi % 100);
  return `${whole}.${frac < 10 ? "0" : ""}${frac}`;
}

function named(id: string, name: string | null): string {
  return `${id} (${name ?? "no facts"})`;
}

function flagsText(flags: readonly string[]): string {
  return flags.length > 0 ? ` [${flags.join(", ")}]` : "";
}

function list(values: readonly string[]): string {
  return values.length > 0 ? values.join(", ") : "-";
}

function breakdown(s: ScoreBreakdown, strategy: PlacementStrategy): string {
  return [
    `execution ${points(s.execution_centi)}`,
    `locality ${points(s.locality_centi)}`,
    `accel_fit ${points(s.accel_fit_centi)}`,
    `perf ${points(s.perf_centi)}`,
    // The load part: the node's cpu, and what is already placed there under the decision's strategy (issue 16). A
    // decision chained before issue 16 carries the total only.
    typeof s.load_placed_centi === "number"
      ? `load ${points(s.load_centi)} (cpu ${points(s.load_cpu_centi)}, ${strategy} ${points(s.load_placed_centi)})`
      : `load ${points(s.load_centi)}`,
    `stickiness ${points(s.stickiness_centi)}`,
  ].join(" + ");
}

function candidateLines(candidates: readonly NodeReport[], strategy: PlacementStrategy): string[] {
  const lines: string[] = [];
  let rankNo = 0;
  for (const c of candidates) {
    if (c.eligible && c.score !== null && c.total_centi !== null) {
      rankNo += 1;
      lines.push(
        `  ${rankNo}. ${named(c.node_id, c.name)} eligible via ${c.variant} (tier ${c.execution}) score ${points(c.total_centi)}${flagsText(c.flags)}`,
      );
      lines.push(`       ${breakdown(c.score, strategy)}`);
    } else {
      lines.push(`  -  ${named(c.node_id, c.name)} rejected`);
      for (const r of c.rejections) lines.push(`       ${r.constraint}: ${r.detail}`);
    }
  }
  return lines;
}

function attemptLine(a: ExplainAttempt, i: number): string {
  let text: string;
  if (a.outcome === "placed") {
    text = a.instance_id ? `placed as ${a.instance_id}` : "placed";
  } else {
    const why = a.code !== null && a.reason !== null ? `${a.code}: ${a.reason}` : (a.code ?? a.reason);
    text = why !== null ? `${a.outcome} (${why})` : a.outcome;
  }
  const next = a.next ? ` -> ${a.next}` : "";
  return `  ${i + 1}. ${a.node_id} via ${a.variant}: ${text}${next}`;
}

export function renderExplain(decision: PlacementDecision, options: ExplainOptions = {}): string {
  const lines: string[] = [];
  lines.push(`workload ${decision.name} (kind ${decision.kind}, package ${decision.package_id})`);
  lines.push(
    `  name: ${decision.name}   allow_emulated: ${decision.allow_emulated}   pin: ${decision.pin ?? "-"}   prefer: ${list(decision.prefer)}   avoid: ${list(decision.avoid)}`,
  );
  const p = decision.placement;
  if (p === null) {
    lines.push("decision: UNPLACEABLE (no eligible node)");
  } else {
    const name = decision.candidates.find((c) => c.node_id === p.node_id)?.name ?? null;
    lines.push(
      `decision: PLACED on ${named(p.node_id, name)} via ${p.variant} (route ${p.route}, tier ${p.execution}) score ${points(p.total_centi)}${flagsText(p.flags)}`,
    );
  }
  lines.push(decision.candidates.length > 0 ? "candidates:" : "candidates: none (no targets known)");
  lines.push(...candidateLines(decision.candidates, decision.strategy ?? "spread"));
  if (options.decision_id) lines.push(`decision_id: ${options.decision_id}`);
  if (options.attempts && options.attempts.length > 0) {
    lines.push("dispatch:");
    options.attempts.forEach((a, i) => {
      lines.push(attemptLine(a, i));
    });
  }
  return `${lines.join("\n")}\n`;
}

/** An engine error for people; a `pin_ineligible` lists the pinned node's failed constraints one per line. */
export function renderPlacementError(error: PlacementError): string {
  const lines = [`placement refused (${error.code}): ${error.message}`];
  for (const r of error.constraints) lines.push(`  ${r.constraint}: ${r.detail}`);
  return `${lines.join("\n")}\n`;
}
