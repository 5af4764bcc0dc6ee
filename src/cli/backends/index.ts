/**
 * The controller backends of the CLI's verbs: the home's files on this machine (local.ts, with node-admin-local.ts) or a
 * `berth serve` over its API (remote.ts), both answering the documents of types.ts. Neither is loaded until a verb
 * runs.
 */
import type { ControllerTarget } from "../remote/target.js";
import type { BackendFlags, ControllerBackend } from "./types.js";

export type * from "./types.js";

/** The controller this invocation talks to (remote/target.ts says how it is chosen), loaded only now. */
export async function openBackend(flags: BackendFlags): Promise<ControllerBackend> {
  const { resolveController } = await import("../remote/target.js");
  const target: ControllerTarget = await resolveController(flags);
  if (target.kind === "local") {
    const local = { ...flags, dataDir: target.home };
    // Issue 35: the lists read the store as it is (stored.ts) without loading the controller; local.ts only when needed.
    return (await import("./stored.js")).localLists(local, async () =>
      (await import("./local.js")).localBackend(local),
    );
  }
  return (await import("./remote.js")).apiBackend(target.server, { sameHost: target.sameHost });
}
