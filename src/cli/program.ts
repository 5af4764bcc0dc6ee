/** The berth command tree, grouped by topic. */
import { Command } from "commander";
import { registerAuditCommands } from "./audit.js";
import { registerKeyCommands } from "./keys.js";
import { registerMeshCommands } from "./mesh.js";
import { registerNodeCommands } from "./node.js";
import { registerPackageCommands } from "./package.js";
import { berthVersion } from "./version.js";

export function buildProgram(): Command {
  const program = new Command("berth")
    .description("berth: run every agent in exactly one place, on Kubernetes or on your own machines, with a signed record of it")
    .version(berthVersion(), "-V, --version", "print berth's version")
    .showHelpAfterError("(run with --help for usage)");
  registerKeyCommands(program);
  registerAuditCommands(program);
  registerNodeCommands(program);
  registerPackageCommands(program);
  registerMeshCommands(program);
  return program;
}
