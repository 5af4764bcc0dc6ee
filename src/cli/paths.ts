/** Where berth keeps its state by default (src/kit/home.ts: $BERTH_HOME, else ~/.berth). Every verb takes flags to override. */
import { join } from "node:path";
import { defaultBerthHome } from "../kit/home.js";

export function berthHome(): string {
  return defaultBerthHome();
}

export const defaultPaths = {
  controllerKey: () => join(berthHome(), "keys", "controller.key"),
  controllerDb: () => join(berthHome(), "controller.db"),
};
