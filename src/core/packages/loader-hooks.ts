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
  other: [
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "TCLLIBPATH",
    "R_PROFILE",
    "R_PROFILE_USER",
    "R_ENVIRON",
    "R_ENVIRON_USER",
    "R_LIBS",
    "R_LIBS_USER",
  ],
  // Issue 33 item 9. Node.js beyond NODE_OPTIONS: TLS verification off, the ICU data file, coverage and cache writers.
  "node-runtime": [
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "NODE_ICU_DATA",
    "NODE_V8_COVERAGE",
    "NODE_COMPILE_CACHE",
    "NODE_REDIRECT_WARNINGS",
    "UV_USE_IO_URING",
  ],
  // PHP reads php.ini from these (auto_prepend_file runs code); Erlang/Elixir take a command line (-eval, -s).
  php: ["PHPRC", "PHP_INI_SCAN_DIR"],
  erlang: ["ELIXIR_ERL_OPTIONS"],
  // Trust: who the agent's TLS believes (a CA file, a directory, a bundle), and where session keys are written.
  tls: [
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "SSLKEYLOGFILE",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "KRB5_CONFIG",
  ],
  // Proxies: every request of the agent, its secrets in headers included, through the setter's host.
  proxy: ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "FTP_PROXY", "NO_PROXY", "GRPC_PROXY"],
  // Programs that other programs start on the agent's behalf (git commit, man, less, sudo -A …).
  editor: [
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "BROWSER",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
  ],
  // Build tools that run a wrapper or take flags that run code (go -toolexec, RUSTC_WRAPPER, MAVEN_OPTS -javaagent).
  build: [
    "GOFLAGS",
    "GOTOOLCHAIN",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "MAVEN_OPTS",
    "GRADLE_OPTS",
    "ANT_OPTS",
    "JAVA_OPTS",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_GEMFILE",
  ],
};

/**
 * Issue 33 item 9: git is refused as a family (GIT_CONFIG_PARAMETERS was measured running a command through an
 * agent's `git status`; GIT_SSH, GIT_ASKPASS, GIT_PROXY_COMMAND, GIT_EXTERNAL_DIFF, GIT_DIR's hooks … all run or pick
 * code), except these, which only name who made a commit or stop a prompt.
 */
const GIT_ALLOWED = new Set([
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_AUTHOR_DATE",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
  "GIT_COMMITTER_DATE",
  "GIT_TERMINAL_PROMPT",
]);

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
  // Issue 33 item 9, by family: git (see GIT_ALLOWED), .NET (DOTNET_STARTUP_HOOKS loads an assembly; CORECLR_PROFILER
  // a native library; COMPlus_ the runtime's knobs), Erlang (ERL_AFLAGS, ERL_ZFLAGS, ERL_FLAGS, ERL_LIBS), package
  // managers (NPM_CONFIG_ script-shell, node-options, registry …), XDG (where every tool reads its configuration),
  // bash (BASH_FUNC_ exported functions, BASH_XTRACEFD …), cargo (CARGO_BUILD_RUSTC_WRAPPER …).
  git: ["GIT_"],
  dotnet: ["DOTNET_", "CORECLR_", "COREHOST_", "COMPLUS_"],
  erlang: ["ERL_"],
  "package-manager": ["NPM_CONFIG_", "YARN_", "PNPM_", "COREPACK_", "PIP_", "CARGO_", "BUNDLE_"],
  xdg: ["XDG_"],
  shell: ["BASH_"],
};

const EXACT_FAMILY = new Map<string, string>(
  Object.entries(EXACT).flatMap(([family, names]) => names.map((n) => [n, family] as const)),
);

/** The family of a loader/interpreter hook (`"node"`, `"loader"` …), or `null` when a placement may set the name. */
export function loaderHookFamily(name: string): string | null {
  const exact = EXACT_FAMILY.get(name);
  if (exact !== undefined) return exact;
  if (GIT_ALLOWED.has(name)) return null;
  for (const [family, prefixes] of Object.entries(PREFIXES))
    if (prefixes.some((p) => name.startsWith(p))) return family;
  return null;
}

export function isLoaderHook(name: string): boolean {
  return loaderHookFamily(name) !== null;
}
