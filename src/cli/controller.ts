/** Opening the mesh controller for one verb, the same way for every verb that needs it (mesh and agents). */
import { hostname, userInfo } from "node:os";
import { resolve } from "node:path";
import type { SigningKey } from "../core/crypto/ed25519.js";
import { existsSync } from "node:fs";
import { generateSigningKey, loadKeyFile, saveKeyFile } from "../keys/key-file.js";
import { MeshController } from "../mesh/controller/index.js";
import type { Connector } from "../mesh/transport/frames.js";
import { announcePlaintext, ControllerConnector, loadPlaintextOptIn } from "../mesh/client/connector.js";
import { databaseOf } from "./database.js";
import { CliError } from "./errors.js";
import { berthHome, defaultPaths } from "./paths.js";

export interface ControllerFlags {
  readonly dataDir?: string;
  /** `--database` (issue 20); else $BERTH_DATABASE_URL; else controller.db in the home (database.ts). */
  readonly database?: string;
  readonly keyFile?: string;
  /** Do not warn about wedged decisions on stderr (`berth doctor` reports them itself). */
  readonly quiet?: boolean;
}

/** The controller key at `path`, made (0600) if absent, as `berth serve` makes it on first start. */
export function ensureControllerKey(path: string): void {
  if (existsSync(path)) return;
  try {
    saveKeyFile(path, generateSigningKey());
  } catch (error) {
    // Another verb on this home made it in the meantime: that key is the one (saveKeyFile never overwrites).
    if (!existsSync(path)) throw error;
  }
}

/** Opens the controller in the berth home with its key, runs `fn`, and always closes it. */
export async function withController<T>(
  opts: ControllerFlags,
  fn: (c: MeshController, key: SigningKey, connector: Connector) => Promise<T>,
): Promise<T> {
  const dataDir = resolve(opts.dataDir ?? berthHome());
  // A key file error keeps its own kind and fix (errors.ts).
  const key = loadKeyFile(opts.keyFile ?? defaultPaths.controllerKey());
  const database = databaseOf(opts.database);
  let controller: MeshController;
  let plaintext: ReturnType<typeof loadPlaintextOptIn>;
  let connector: Connector;
  try {
    plaintext = loadPlaintextOptIn(dataDir);
    connector = new ControllerConnector({ identity: key, plaintext });
    controller = await MeshController.open({ dataDir, key, connector, ...(database ? { database } : {}) });
  } catch (error) {
    // The engine's message names a PostgreSQL store by its address without the password (src/store/open.ts).
    throw new CliError(
      database
        ? `cannot open the controller state: ${(error as Error).message}`
        : `cannot open the controller state in ${dataDir}: ${(error as Error).message}`,
    );
  }
  try {
    await announcePlaintext({
      optIn: plaintext,
      home: dataDir,
      chain: controller.store,
      via: "cli",
      always: false,
      warn: (line) => process.stderr.write(`${line}\n`),
    });
  } catch (error) {
    await controller.close();
    throw error;
  }
  const wedged = opts.quiet ? [] : await controller.wedged();
  if (wedged.length > 0) {
    // Not an error: every verb still works; settle skips these decisions until they are repaired.
    process.stderr.write(
      `warning: ${wedged.length} decision(s) in ${dataDir} are wedged (unsettled while a placement records them: ${wedged.map((w) => w.decision_id.slice(0, 12)).join(", ")}); run \`berth doctor\` to see them and \`berth doctor --repair\` to mend them\n`,
    );
  }
  try {
    return await fn(controller, key, connector);
  } finally {
    await controller.close();
  }
}

/** Who runs this verb, for an operator action the chain records (a repair, a verb on an unmanaged instance). */
export function operatorIdentity(via: string): { user: string; uid: number; pid: number; host: string; via: string } {
  let user = "unknown";
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container): the uid still says who
  }
  return { user, uid: process.getuid?.() ?? -1, pid: process.pid, host: hostname(), via };
}
