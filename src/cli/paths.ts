/** Where berth keeps its state by default: $BERTH_HOME, else ~/.berth. Every verb takes flags to override. */
import { homedir } from "node:os";
import { join } from "node:path";

export function berthHome(): string {
  return process.env.BERTH_HOME ?? join(homedir(), ".berth");
}

export const defaultPaths = {
  controllerKey: () => join(berthHome(), "keys", "controller.key"),
  controllerDb: () => join(berthHome(), "controller.db"),
};
