/** The berth command tree; `berth --help` groups it by topic (help.ts), whatever the order of the calls below. */
import { Command } from "commander";
import { registerAgentCommands } from "./agents.js";
import { registerAuditCommands } from "./audit.js";
import { registerBackupCommands } from "./backup.js";
import { registerCompletionCommands } from "./completion.js";
import { registerDoctorCommands } from "./doctor.js";
import { registerDownCommands } from "./down.js";
import { presentForPeople } from "./help.js";
import { registerK8sCommands } from "./k8s.js";
import { registerKeyCommands } from "./keys.js";
import { registerMeshCommands } from "./mesh.js";
import { registerProviderCommands } from "./provider.js";
import { registerNodeCommands } from "./node.js";
import { registerPackageCommands } from "./package.js";
import { registerServeCommands } from "./serve.js";
import { registerUpCommands } from "./up.js";
import { berthVersion } from "../version.js";

export function buildProgram(): Command {
  const program = new Command("berth")
    .description("berth: run every agent in exactly one place, on Kubernetes or on your own machines, with a signed record of it")
    .version(berthVersion(), "-V, --version", "print berth's version")
    .showHelpAfterError("(run with --help for usage)");
  // First: commander copies help, output and exit settings to the subcommands registered after it.
  presentForPeople(program);
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
  registerUpCommands(program);
  registerDownCommands(program);
  registerBackupCommands(program);
  registerServeCommands(program);
  return program;
}
