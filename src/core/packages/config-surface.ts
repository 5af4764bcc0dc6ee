/**
 * A package's configuration surface (issue 12): the signed statement declares which environment names and which
 * argument flags a placement may set, each with a type. A placement's `config.env` / `config.args` outside it is
 * refused (`config_refused`, naming the field), because a value the signer did not foresee is code the signer did
 * not sign (`NODE_OPTIONS=--import=…`, `BASH_ENV=…`). Loader and interpreter hooks (`loader-hooks.ts`) are refused
 * even when declared, both here (so no such surface can be built or signed) and on the node.
 *
 * A statement without `config` has the empty surface: no env and no args are accepted. `config` is optional and has
 * no defaults inside, so the id of a statement written before the surface existed does not change.
 */
import { z } from "zod";
import { err, ok, type Result } from "../../kit/result.js";
import { loaderHookFamily } from "./loader-hooks.js";

export const CONFIG_VALUE_TYPES = ["string", "integer", "boolean", "secret"] as const;
export type ConfigValueType = (typeof CONFIG_VALUE_TYPES)[number];

const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;
const FLAG = /^--?[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A pattern must compile (as a whole-value match, `u` flag); a signer's typo is refused at build, not at place. */
const PatternSchema = z
  .string()
  .min(1)
  .max(512)
  .refine(
    (p) => compilePattern(p) !== null,
    "pattern must be a valid regular expression (JavaScript syntax, matched against the whole value)",
  );

const DeclarationSchema = z
  .strictObject({
    type: z.enum(CONFIG_VALUE_TYPES),
    description: z.string().max(1024).optional(),
    /**
     * Issue 33 item 9: a `string` may carry a pattern the whole value must match (`^(?:PATTERN)$`), so a signer can
     * declare a name it must let through (a URL, a level) and still say what values it foresaw.
     */
    pattern: PatternSchema.optional(),
  })
  .refine((d) => d.pattern === undefined || d.type === "string", {
    message: "pattern applies to type string only",
    path: ["pattern"],
  });

function compilePattern(pattern: string): RegExp | null {
  try {
    return new RegExp(`^(?:${pattern})$`, "u");
  } catch {
    return null;
  }
}
export type ConfigDeclaration = z.infer<typeof DeclarationSchema>;

/** Names are checked here rather than as record keys, so the message (and the field path) survives to the user. */
function declarations(pattern: RegExp, what: string, refuseHooks: boolean) {
  return z.record(z.string(), DeclarationSchema).superRefine((decls, ctx) => {
    const names = Object.keys(decls);
    if (names.length > 64) ctx.addIssue({ code: "custom", message: `at most 64 ${what} declarations` });
    for (const name of names) {
      if (!pattern.test(name))
        ctx.addIssue({ code: "custom", path: [name], message: `${what} names must match ${pattern.source}` });
      const family = refuseHooks ? loaderHookFamily(name) : null;
      if (family !== null) ctx.addIssue({ code: "custom", path: [name], message: hookMessage(name, family) });
    }
  });
}

export const ConfigSurfaceSchema = z.strictObject({
  env: declarations(ENV_NAME, "env", true).optional(),
  args: declarations(FLAG, "flag", false).optional(),
});
export type ConfigSurface = z.infer<typeof ConfigSurfaceSchema>;

export interface ResolvedSurface {
  readonly env: Readonly<Record<string, ConfigDeclaration>>;
  readonly args: Readonly<Record<string, ConfigDeclaration>>;
}

/** The surface a statement declares; absent means empty (nothing accepted). */
export function surfaceOf(config: ConfigSurface | undefined): ResolvedSurface {
  return { env: config?.env ?? {}, args: config?.args ?? {} };
}

/** The first field outside the surface and why (never its value). */
export interface ConfigRefusal {
  readonly field: string;
  readonly reason: string;
}

export type ConfigVerdict = Result<void, ConfigRefusal>;

function hookMessage(name: string, family: string): string {
  return `${name} is a ${family} hook (it makes a loader, shell or interpreter run code no signer signed) and is never accepted`;
}

function typeError(type: ConfigValueType, value: string): string | null {
  switch (type) {
    case "string":
    case "secret":
      return null;
    case "integer":
      return /^-?(0|[1-9][0-9]{0,17})$/.test(value) ? null : "must be an integer";
    case "boolean":
      return value === "true" || value === "false" ? null : "must be true or false";
    default: {
      const never: never = type;
      return `has an unknown type ${String(never)}`;
    }
  }
}

/**
 * Checks a placement's run configuration against the surface; the first field outside it is named
 * (`config.env.NODE_OPTIONS`, `config.args[2]`). Values are never echoed (a `secret` may be among them).
 *
 * Arguments are read as flags: `--flag value` or `--flag=value`; a `boolean` flag stands alone (or `--flag=true`).
 * Anything that is not a declared flag, or its value, is refused: the signed `entry.args` come first and a
 * placement can only add what the signer declared.
 */
export function checkRunConfig(
  surface: ResolvedSurface,
  config: { readonly env: Readonly<Record<string, string>>; readonly args: readonly string[] },
  packageName: string,
): ConfigVerdict {
  for (const [name, value] of Object.entries(config.env)) {
    const field = `config.env.${name}`;
    const family = loaderHookFamily(name);
    if (family !== null) return err({ field, reason: hookMessage(name, family) });
    const decl = surface.env[name];
    if (!decl)
      return err({
        field,
        reason: `${name} is not in the configuration surface package ${packageName} declares`,
      });
    const bad = typeError(decl.type, value);
    if (bad) return err({ field, reason: `${name} ${bad} (declared ${decl.type})` });
    if (decl.pattern !== undefined && compilePattern(decl.pattern)?.test(value) !== true) {
      return err({ field, reason: `${name} does not match the pattern package ${packageName} declares for it` });
    }
  }
  for (let i = 0; i < config.args.length; i++) {
    const arg = config.args[i] as string;
    const field = `config.args[${i}]`;
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("-") && eq > 0 ? arg.slice(0, eq) : arg;
    const inline = arg.startsWith("-") && eq > 0 ? arg.slice(eq + 1) : undefined;
    const decl = Object.hasOwn(surface.args, flag) ? surface.args[flag] : undefined;
    if (!decl) return err({ field, reason: `argument ${i} is not a flag package ${packageName} declares` });
    if (decl.type === "boolean" && inline === undefined) continue;
    let value = inline;
    if (value === undefined) {
      i++;
      value = config.args[i];
      if (value === undefined) return err({ field, reason: `flag ${flag} needs a value (declared ${decl.type})` });
    }
    const bad = typeError(decl.type, value);
    if (bad) return err({ field, reason: `the value of flag ${flag} ${bad} (declared ${decl.type})` });
    if (decl.pattern !== undefined && compilePattern(decl.pattern)?.test(value) !== true) {
      return err({
        field,
        reason: `the value of flag ${flag} does not match the pattern package ${packageName} declares for it`,
      });
    }
  }
  return ok();
}

/**
 * Issue 33 item 10: an env the signed package types `secret` is never given inline in an agent spec: the spec text is
 * kept whole in the controller store (and so in every backup). The first such name, for an error naming its field.
 */
export function inlineSecret(surface: ResolvedSurface, inlineNames: readonly string[]): string | null {
  for (const name of inlineNames) if (surface.env[name]?.type === "secret") return name;
  return null;
}
