/**
 * Environment names no placement may ever set, even when a signed package declares them (issue 12): each one makes a
 * loader, a shell or an interpreter run code that no trusted signer signed, or moves where the signed code is
 * found, so accepting it would let whoever may place (a controller) run anything with the agent's (or the daemon's)
 * rights. Pure data and one predicate; `berth package build`/`sign` and the node both apply it.
 */

/** Exact names, by family; the comment says what each family lets a setter do. */
const EXACT: Readonly<Record<string, readonly string[]>> = {
  // Node.js: NODE_OPTIONS takes --import/--require (arbitrary code, even data: URLs); NODE_PATH moves module lookup.
  node: ["NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "NODE_EXTRA_CA_CERTS"],
  // POSIX shells: bash sources BASH_ENV, sh/dash source ENV, before the script; SHELLOPTS/BASHOPTS turn on
  // xtrace and friends, PS4 is expanded (command substitution) under xtrace; IFS changes how every word splits.
  shell: ["BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH", "GLOBIGNORE", "PROMPT_COMMAND"],
  // Perl: PERL5OPT is a command line (-M loads a module), PERLLIB/PERL5LIB move @INC.
  perl: ["PERLLIB"],
  // Ruby: RUBYOPT is a command line (-r requires a file), RUBYLIB moves the load path.
  ruby: ["RUBYOPT", "RUBYLIB"],
  // The JVM reads extra options (-javaagent: loads code) from these.
  java: ["JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH"],
  // glibc: iconv modules and locale data are loaded from these directories (code and parsers an attacker controls).
  libc: ["GCONV_PATH", "LOCPATH", "TZDIR", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "MALLOC_CHECK_"],
  // Where programs and the agent's own files are found: the host contract sets these, a placement may not move them.
  host: ["PATH", "HOME", "TMPDIR", "SHELL", "USER", "LOGNAME"],
  // Other interpreters with a startup-file or module-path hook.
  other: ["LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH", "GIT_EXEC_PATH", "GIT_CONFIG_GLOBAL", "GIT_SSH_COMMAND"],
};

/** Name prefixes, by family. */
const PREFIXES: Readonly<Record<string, readonly string[]>> = {
  // The dynamic loader: LD_PRELOAD / LD_LIBRARY_PATH / LD_AUDIT inject shared objects into every process; DYLD_* on darwin.
  loader: ["LD_", "DYLD_"],
  // Python: PYTHONSTARTUP, PYTHONPATH, PYTHONHOME, PYTHONINSPECT … all change what code runs.
  python: ["PYTHON"],
  // Perl: PERL5OPT, PERL5LIB, PERL5DB (a debugger command line) …
  perl: ["PERL5"],
  // berth's own contract (BERTH_INSTANCE_ID …) is written by the node, never by a placement.
  berth: ["BERTH_"],
};

const EXACT_FAMILY = new Map<string, string>(Object.entries(EXACT).flatMap(([family, names]) => names.map((n) => [n, family] as const)));

/** The family of a loader/interpreter hook (`"node"`, `"loader"` …), or `null` when a placement may set the name. */
export function loaderHookFamily(name: string): string | null {
  const exact = EXACT_FAMILY.get(name);
  if (exact !== undefined) return exact;
  for (const [family, prefixes] of Object.entries(PREFIXES)) if (prefixes.some((p) => name.startsWith(p))) return family;
  return null;
}

export function isLoaderHook(name: string): boolean {
  return loaderHookFamily(name) !== null;
}
