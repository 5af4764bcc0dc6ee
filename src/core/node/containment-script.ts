/**
 * The POSIX sh wrapper that leads every instance's process group (spec/mesh.md §13). Pure: it only builds text.
 *
 * `sh -c SCRIPT EXIT_STATUS_FILE [PREFIX...] PROGRAM ARGS...`. In order, the wrapper
 * 1. joins the instance's cgroups (it writes its own pid into each `cgroup.procs` before it forks anything, so
 *    nothing the agent starts is ever outside them); a join that fails ends the start with code 125;
 * 2. runs the entry in the background behind the prefix (`unshare -n`, `setpriv` to the agent user), survives a
 *    graceful TERM long enough to write the entry's status to the status file (even an exit that happened while the
 *    daemon was down has a code);
 * 3. when the entry ended by itself (not a stop: a stop's grace and escalation belong to the daemon), ends every
 *    process the entry left behind: `cgroup.kill`, else a kill loop over the tracking cgroup, and always the process
 *    group ("nothing an agent forks outlives it"). The last step kills the wrapper too, after the status is written.
 */

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

export interface WrapperInput {
  /** `cgroup.procs` files to join, in order. */
  readonly join: readonly string[];
  /** A v2 `cgroup.kill` file, when the kernel has one. */
  readonly killFile: string | null;
  /** The tracking cgroup's `cgroup.procs`, for the kill loop when there is no `cgroup.kill`. */
  readonly procsFile: string | null;
}

/** Exit code of a wrapper that could not place itself in the instance's cgroups. */
export const JOIN_FAILED_EXIT = 125;

/** Issue 16: the file in the instance's directory (beside the status file) holding its lease deadline, in seconds. */
export const LEASE_DEADLINE_FILE = "lease_deadline";

/**
 * Issue 16 (docs/concepts.md "The node lease", assumption A3): on a leased node the daemon writes the deadline file
 * before the spawn, and this watchdog in the group enforces it even while no daemon runs: past the deadline it
 * terminates the entry (the wrapper then reaps what is left, step 3), and 2 s later kills the whole group. Without the
 * file it is never started. A subshell's traps are reset, so a stop's TERM to the group ends it at once.
 */
const LEASE_WATCHDOG = [
  `l="\${0%/*}/${LEASE_DEADLINE_FILE}"`,
  'if [ -f "$l" ]; then (',
  "  while kill -0 $c 2>/dev/null; do",
  '    d=; read -r d < "$l" 2>/dev/null',
  '    if [ -n "$d" ] && [ "$(date +%s)" -ge "$d" ]; then kill -TERM $c 2>/dev/null; sleep 2; kill -KILL 0; fi',
  "    sleep 1",
  "  done",
  ") & fi",
];

export function wrapperScript(input: WrapperInput): string {
  const lines: string[] = [];
  if (input.join.length > 0) {
    lines.push(`for f in ${input.join.map(quote).join(" ")}; do`);
    lines.push(`  echo $$ > "$f" || { echo "berth: could not join cgroup $f" >&2; exit ${JOIN_FAILED_EXIT}; }`);
    lines.push("done");
  }
  lines.push('"$@" &', "c=$!");
  lines.push(...LEASE_WATCHDOG);
  lines.push("t=", "trap 't=1' TERM INT HUP", "wait $c; s=$?", "while kill -0 $c 2>/dev/null; do wait $c; s=$?; done");
  lines.push('printf "%s\\n" "$s" > "$0.tmp" && mv "$0.tmp" "$0"');
  const reap: string[] = [];
  if (input.killFile) reap.push(`echo 1 > ${quote(input.killFile)} 2>/dev/null`);
  if (input.procsFile) {
    reap.push(
      `for i in 1 2 3; do while read p; do [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null; done < ${quote(input.procsFile)}; done`,
    );
  }
  reap.push("kill -KILL 0 2>/dev/null");
  lines.push(`if [ -z "$t" ]; then ${reap.join("; ")}; fi`);
  lines.push("exit $s");
  return lines.join("\n");
}
