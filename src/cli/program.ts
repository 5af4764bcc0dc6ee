/**
 * The berth command tree; `berth --help` groups it by topic (help.ts), whatever the order of the calls below.
 *
 * Each verb group registers itself from its own file (`register…Commands`), and a registration file imports only
 * commander and the CLI's small helpers: a verb's libraries are imported inside its action, so building the tree —
 * for `--help`, completion, or any verb — costs little (issue 19). To add a verb: register it in its group's file
 * (or a new file called from here) and give a new top-level verb a topic in help.ts.
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
import { registerProviderCommands } from "./provider.js";
import { registerNodeCommands } from "./node.js";
import { registerPackageCommands } from "./package.js";
import { finishProgram, rootCommand } from "./program-frame.js";
import { registerServeCommands } from "./serve.js";
import { registerUpCommands } from "./up.js";

export function buildProgram(): Command {
  const program = rootCommand();
  registerCompletionCommands(program);
  registerKeyCommands(program);
  registerAuditCommands(program);
  registerK8sCommands(program);
  registerProviderCommands(program);
  registerNodeCommands(program);
  registerPackageCommands(program);
  registerMeshCommands(program);
  registerDoctorCommands(program);
  registerAgentCommands(program);
  registerContextCommands(program);
  registerUpCommands(program);
  registerDownCommands(program);
  registerBackupCommands(program);
  registerServeCommands(program);
  registerMigrateCommands(program);
  return finishProgram(program);
}
