/**
 * The berth command tree; `berth --help` groups it by topic (help.ts), whatever the order of the calls below.
 *
 * Each verb group registers itself from its own file (`register…Commands`), and a registration file imports only
 * commander and the CLI's small helpers: a verb's libraries are imported inside its action, so building the tree —
 * for `--help`, completion, or any verb — costs little (issue 19). To add a verb: register it in its group's file,
 * list a new top-level verb in GROUPS below (a new file too), and give it a topic in help.ts.
 */
import type { Command } from "commander";
import { registerAgentCommands } from "./agents.js";
import { registerAuditCommands } from "./audit.js";
import { registerBackupCommands } from "./backup.js";
import { registerCompletionCommands } from "./completion.js";
import { registerContextCommands } from "./context.js";
import { registerDoctorCommands } from "./doctor.js";
import { registerDownCommands } from "./down.js";
import { registerK8sCommands } from "./k8s.js";
import { registerKeyCommands } from "./keys.js";
import { registerMeshCommands } from "./mesh.js";
import { registerMigrateCommands } from "./migrate.js";
import { registerNodeCommands } from "./node.js";
import { registerPackageCommands } from "./package.js";
import { finishProgram, rootCommand } from "./program-frame.js";
import { registerProviderCommands } from "./provider.js";
import { registerRevokeCommands } from "./revoke.js";
import { registerServeCommands } from "./serve.js";
import { registerUpCommands } from "./up.js";

/**
 * Which file registers each top-level verb. A command line that names one builds only that group (issue 19: `berth
 * place` registered every verb of every group first); `--help`, `help`, completion, or anything else, the whole tree.
 * test/cli/program.test.ts checks that each group registers exactly these verbs, and that a verb's own tree answers
 * as the whole one does. Completion's verbs walk the whole tree, so they are not a group of their own here.
 */
const GROUPS: ReadonlyArray<{ readonly verbs: readonly string[]; readonly register: (program: Command) => void }> = [
  { verbs: ["keys"], register: registerKeyCommands },
  { verbs: ["audit", "events"], register: registerAuditCommands },
  { verbs: ["k8s"], register: registerK8sCommands },
  { verbs: ["provider"], register: registerProviderCommands },
  { verbs: ["node"], register: registerNodeCommands },
  { verbs: ["package"], register: registerPackageCommands },
  { verbs: ["place", "nodes", "instances", "top", "instance", "unsettled"], register: registerMeshCommands },
  { verbs: ["doctor"], register: registerDoctorCommands },
  { verbs: ["revoke", "unrevoke"], register: registerRevokeCommands },
  { verbs: ["deploy", "agents", "agent"], register: registerAgentCommands },
  { verbs: ["context"], register: registerContextCommands },
  { verbs: ["up"], register: registerUpCommands },
  { verbs: ["down"], register: registerDownCommands },
  { verbs: ["backup", "restore"], register: registerBackupCommands },
  { verbs: ["serve"], register: registerServeCommands },
  { verbs: ["migrate"], register: registerMigrateCommands },
];

/** Every verb group's verbs, as GROUPS lists them (for the test that keeps the list true). */
export const GROUP_VERBS: ReadonlyArray<readonly string[]> = GROUPS.map((g) => g.verbs);

/** The whole tree; or, given the verb a command line starts with, only the group that registers it, when one does. */
export function buildProgram(verb?: string): Command {
  const program = rootCommand();
  const group = verb === undefined ? undefined : GROUPS.find((g) => g.verbs.includes(verb));
  if (group) {
    group.register(program);
    return finishProgram(program);
  }
  registerCompletionCommands(program);
  for (const g of GROUPS) g.register(program);
  return finishProgram(program);
}
