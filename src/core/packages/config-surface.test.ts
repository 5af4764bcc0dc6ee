import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkRunConfig, ConfigSurfaceSchema, surfaceOf } from "./config-surface.js";
import { isLoaderHook, loaderHookFamily } from "./loader-hooks.js";

const surface = surfaceOf({ env: { LEVEL: { type: "string" }, RETRIES: { type: "integer" }, DRY: { type: "boolean" }, TOKEN: { type: "secret" } }, args: { "--watch": { type: "string" }, "-v": { type: "boolean" }, "--n": { type: "integer" } } });
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
  ])("%s is a %s hook, refused even when declared", (name, family) => {
    expect(loaderHookFamily(name)).toBe(family);
    const parsed = ConfigSurfaceSchema.safeParse({ env: { [name]: { type: "string" } } });
    expect(parsed.success).toBe(false);
    expect(checkRunConfig(surfaceOf({ env: { [name]: { type: "string" } } }), { env: { [name]: "x" }, args: [] }, "p")).toMatchObject({ ok: false, field: `config.env.${name}` });
  });

  it("ordinary names are not hooks", () => {
    for (const name of ["LOG_LEVEL", "GREETING", "API_URL", "LANG", "TZ", "NODE_ENV_NAME_X"]) expect(isLoaderHook(name), name).toBe(false);
  });

  it("accepts declared names and flags with values of their type", () => {
    expect(check({ LEVEL: "debug", RETRIES: "-3", DRY: "true", TOKEN: "s3cret" }, ["--watch", "inbox", "-v", "--n=4", "--watch=x"])).toEqual({ ok: true });
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
    expect(verdict).toMatchObject({ ok: false, field });
    if (!verdict.ok) for (const v of [...Object.values(env), ...args.filter((a) => !a.startsWith("-"))]) expect(verdict.reason).not.toContain(v);
  });

  it("the empty surface (no config in the statement) accepts nothing but an empty config", () => {
    expect(checkRunConfig(surfaceOf(undefined), { env: {}, args: [] }, "p")).toEqual({ ok: true });
    fc.assert(
      fc.property(fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), fc.string(), { minKeys: 1 }), fc.array(fc.string()), (env, args) => {
        expect(checkRunConfig(surfaceOf(undefined), { env, args }, "p").ok).toBe(false);
        expect(checkRunConfig(surfaceOf(undefined), { env: {}, args: args.length ? args : ["x"] }, "p").ok).toBe(false);
      }),
    );
  });
});
