import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkRunConfig, ConfigSurfaceSchema, inlineSecret, surfaceOf } from "./config-surface.js";
import { isLoaderHook, loaderHookFamily } from "./loader-hooks.js";

const surface = surfaceOf({
  env: { LEVEL: { type: "string" }, RETRIES: { type: "integer" }, DRY: { type: "boolean" }, TOKEN: { type: "secret" } },
  args: { "--watch": { type: "string" }, "-v": { type: "boolean" }, "--n": { type: "integer" } },
});
const check = (env: Record<string, string>, args: string[] = []) => checkRunConfig(surface, { env, args }, "probe");

describe("the configuration surface", () => {
  it.each([
    ["NODE_OPTIONS", "node"],
    ["NODE_PATH", "node"],
    ["LD_PRELOAD", "loader"],
    ["LD_LIBRARY_PATH", "loader"],
    ["DYLD_INSERT_LIBRARIES", "loader"],
    ["BASH_ENV", "shell"],
    ["ENV", "shell"],
    ["IFS", "shell"],
    ["SHELLOPTS", "shell"],
    ["BASHOPTS", "shell"],
    ["PS4", "shell"],
    ["PYTHONSTARTUP", "python"],
    ["PYTHONPATH", "python"],
    ["PERL5OPT", "perl"],
    ["PERLLIB", "perl"],
    ["RUBYOPT", "ruby"],
    ["RUBYLIB", "ruby"],
    ["JAVA_TOOL_OPTIONS", "java"],
    ["_JAVA_OPTIONS", "java"],
    ["GCONV_PATH", "libc"],
    ["LOCPATH", "libc"],
    ["TZDIR", "libc"],
    ["PATH", "host"],
    ["HOME", "host"],
    ["BERTH_INSTANCE_ID", "berth"],
    // Issue 33 item 9: by family.
    ["GIT_CONFIG_PARAMETERS", "git"],
    ["GIT_CONFIG_KEY_0", "git"],
    ["GIT_SSH", "git"],
    ["GIT_ASKPASS", "git"],
    ["GIT_PROXY_COMMAND", "git"],
    ["GIT_EXTERNAL_DIFF", "git"],
    ["DOTNET_STARTUP_HOOKS", "dotnet"],
    ["CORECLR_PROFILER_PATH", "dotnet"],
    ["PHPRC", "php"],
    ["ERL_AFLAGS", "erlang"],
    ["ERL_ZFLAGS", "erlang"],
    ["NODE_TLS_REJECT_UNAUTHORIZED", "node-runtime"],
    ["NPM_CONFIG_SCRIPT_SHELL", "package-manager"],
    ["SSL_CERT_FILE", "tls"],
    ["OPENSSL_CONF", "tls"],
    ["HTTPS_PROXY", "proxy"],
    ["EDITOR", "editor"],
    ["PAGER", "editor"],
    ["XDG_CONFIG_HOME", "xdg"],
    ["BASH_FUNC_X", "shell"],
    ["GOFLAGS", "build"],
  ])("%s is a %s hook, refused even when declared", (name, family) => {
    expect(loaderHookFamily(name)).toBe(family);
    const parsed = ConfigSurfaceSchema.safeParse({ env: { [name]: { type: "string" } } });
    expect(parsed.success).toBe(false);
    expect(
      checkRunConfig(surfaceOf({ env: { [name]: { type: "string" } } }), { env: { [name]: "x" }, args: [] }, "p"),
    ).toMatchObject({ ok: false, error: { field: `config.env.${name}` } });
  });

  it("ordinary names are not hooks", () => {
    for (const name of [
      "LOG_LEVEL",
      "GREETING",
      "API_URL",
      "LANG",
      "TZ",
      "NODE_ENV_NAME_X",
      "GIT_AUTHOR_NAME",
      "GIT_COMMITTER_EMAIL",
      "UV_THREADPOOL_SIZE",
    ])
      expect(isLoaderHook(name), name).toBe(false);
  });

  it("a declared string's pattern must match the whole value; a pattern on another type, or one that does not compile, is refused", () => {
    const surface = surfaceOf({ env: { LOG_LEVEL: { type: "string", pattern: "debug|info" } } });
    expect(checkRunConfig(surface, { env: { LOG_LEVEL: "info" }, args: [] }, "p")).toEqual({ ok: true });
    expect(checkRunConfig(surface, { env: { LOG_LEVEL: "info; rm -rf /" }, args: [] }, "p")).toMatchObject({
      ok: false,
      error: { field: "config.env.LOG_LEVEL" },
    });
    expect(JSON.stringify(checkRunConfig(surface, { env: { LOG_LEVEL: "secret-ish" }, args: [] }, "p"))).not.toContain(
      "secret-ish",
    );
    expect(ConfigSurfaceSchema.safeParse({ env: { N: { type: "integer", pattern: "1" } } }).success).toBe(false);
    expect(ConfigSurfaceSchema.safeParse({ env: { N: { type: "string", pattern: "(" } } }).success).toBe(false);
  });

  it("an inline value for a secret-typed env is named; string-typed ones are not", () => {
    const surface = surfaceOf({ env: { API_KEY: { type: "secret" }, LEVEL: { type: "string" } } });
    expect(inlineSecret(surface, ["LEVEL", "API_KEY"])).toBe("API_KEY");
    expect(inlineSecret(surface, ["LEVEL"])).toBeNull();
  });

  it("accepts declared names and flags with values of their type", () => {
    expect(
      check({ LEVEL: "debug", RETRIES: "-3", DRY: "true", TOKEN: "s3cret" }, [
        "--watch",
        "inbox",
        "-v",
        "--n=4",
        "--watch=x",
      ]),
    ).toEqual({ ok: true });
  });

  it.each([
    [{ OTHER: "1" }, [], "config.env.OTHER"],
    [{ RETRIES: "1.5" }, [], "config.env.RETRIES"],
    [{ DRY: "yes" }, [], "config.env.DRY"],
    [{}, ["inbox"], "config.args[0]"],
    [{}, ["--watch"], "config.args[0]"],
    [{}, ["-v", "--n", "x"], "config.args[1]"],
    [{}, ["-v=maybe"], "config.args[0]"],
    [{}, ["--watch", "inbox-q", "--exec=sh"], "config.args[2]"],
  ])("refuses %o %o naming %s, never echoing the value", (env, args, field) => {
    const verdict = check(env, args);
    expect(verdict).toMatchObject({ ok: false, error: { field } });
    if (!verdict.ok)
      for (const v of [...Object.values(env), ...args.filter((a) => !a.startsWith("-"))])
        expect(verdict.error.reason).not.toContain(v);
  });

  it("the empty surface (no config in the statement) accepts nothing but an empty config", () => {
    expect(checkRunConfig(surfaceOf(undefined), { env: {}, args: [] }, "p")).toEqual({ ok: true });
    fc.assert(
      fc.property(
        fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), fc.string(), { minKeys: 1 }),
        fc.array(fc.string()),
        (env, args) => {
          expect(checkRunConfig(surfaceOf(undefined), { env, args }, "p").ok).toBe(false);
          expect(checkRunConfig(surfaceOf(undefined), { env: {}, args: args.length ? args : ["x"] }, "p").ok).toBe(
            false,
          );
        },
      ),
    );
  });
});
