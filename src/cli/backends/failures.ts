/**
 * The CLI's words and exit status for every failure of an agent verb (and of a node admin verb, at the end) (src/agents/target.ts AgentFailure), in one
 * place for both backends (issue 36: one error text per mistake): local.ts words the failures of the verbs it ran on
 * the files; remote.ts words the same failure a `berth serve` ran into and sent back (`error.failure`), so a refusal
 * reads the same, with the same exit status, whichever way the CLI went. Imports types only from src/agents.
 */
import type { AgentFailure, FailureMap } from "../../agents/index.js";
import { CliError, invalidInput, unknownAgent, unreachableNode } from "../errors.js";

const CLI_ERRORS: FailureMap<CliError> = {
  spec_invalid: (f) => invalidInput(f.message),
  unknown_agent: (f) => unknownAgent(f.agent),
  instance_verb_failed: (f) =>
    f.result.kind === "unreachable"
      ? unreachableNode(`${f.verb} ${f.agent} (${f.instance}) on ${f.result.node}`, f.result.reason)
      : new CliError(f.message, 1),
  spec_unusable: (f) => new CliError(f.message, f.usage ? 2 : 1),
  agent_mismatch: (f) => new CliError(f.message),
  spec_unreadable: (f) => new CliError(f.message),
  settings_invalid: (f) => new CliError(f.message),
  audit_unavailable: (f) => new CliError(f.message, 1),
  cluster_not_configured: (f) => new CliError(f.message, 1),
  cluster_unreachable: (f) => new CliError(f.message, 1),
  no_instance: (f) => new CliError(f.message, 1),
  pod_absent: (f) => new CliError(f.message, 1),
  log_unreadable: (f) => new CliError(f.message, 1),
};

export function agentFailureError(f: AgentFailure): CliError {
  return (CLI_ERRORS[f.kind] as (f: AgentFailure) => CliError)(f);
}

/** A failure a server sent back, when it is one of ours (a newer server's unknown kind is worded by the caller). */
export function sentFailure(value: unknown): AgentFailure | null {
  if (typeof value !== "object" || value === null) return null;
  const f = value as { kind?: unknown; message?: unknown };
  return typeof f.kind === "string" && typeof f.message === "string" && Object.hasOwn(CLI_ERRORS, f.kind)
    ? (value as AgentFailure)
    : null;
}

/**
 * `berth node cordon|uncordon|forget|drain`: the controller's reason (src/mesh/controller/node-admin.ts), on the files
 * or sent back by a server as `error.failure` of kind `node_admin`: an unknown node is a refusal, anything else a node
 * that did not answer.
 */
export function nodeAdminError(reason: string): CliError {
  // Issue 36: `nodes remove` of a node not forgotten (or listed in peers.json) is refused too, naming its state.
  const refused = reason.startsWith("no known node") || / not forgotten: | is listed in peers\.json /.test(reason);
  return new CliError(reason, 1, { kind: refused ? "refused" : "unreachable" });
}
