/**
 * A command line that names a verb builds only that verb's group (program.ts, issue 19: start-up), so each group's
 * tree must answer exactly as the whole tree does: the same verbs, options, help and completion data.
 */
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { commandTree } from "../../src/cli/command-tree.js";
import { buildProgram, GROUP_VERBS } from "../../src/cli/program.js";

const topLevel = (program: Command) => program.commands.map((c) => c.name());

/** Every command under `verb`, by its path, with the help commander prints for it. */
function helpUnder(program: Command, verb: string): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (cmd: Command, path: string) => {
    out.set(path, cmd.helpInformation());
    for (const sub of cmd.commands) visit(sub, `${path} ${sub.name()}`);
  };
  const top = program.commands.find((c) => c.name() === verb);
  if (top) visit(top, verb);
  return out;
}

describe("the command tree a command line builds", () => {
  it("lists, for each group, exactly the top-level verbs that group registers, and every verb of the whole tree but completion's", () => {
    for (const verbs of GROUP_VERBS)
      for (const verb of verbs) expect(topLevel(buildProgram(verb)), verb).toEqual(verbs);
    const whole = topLevel(buildProgram());
    expect(whole.filter((v) => !["completion", "__complete"].includes(v)).sort()).toEqual(GROUP_VERBS.flat().sort());
  });

  it("gives every command under a verb the same help, options and completion data as the whole tree does", () => {
    const whole = buildProgram();
    const wholeTree = commandTree(whole);
    for (const verb of GROUP_VERBS.flat()) {
      const own = buildProgram(verb);
      expect(helpUnder(own, verb), verb).toEqual(helpUnder(whole, verb));
      expect(
        commandTree(own).filter((n) => n.path[0] === verb),
        verb,
      ).toEqual(wholeTree.filter((n) => n.path[0] === verb));
    }
  });

  it("builds the whole tree for --help, help, completion and a word that is no verb, so they list and suggest every verb", () => {
    const whole = topLevel(buildProgram());
    for (const first of [undefined, "--help", "-h", "help", "completion", "__complete", "plac", "--json"])
      expect(topLevel(buildProgram(first)), String(first)).toEqual(whole);
  });
});
