/**
 * `--database URL` / `$BERTH_DATABASE_URL` (issue 20): which store the controller's state is in, the same on every
 * verb, `berth serve` and `berth up`. Absent: the SQLite file in the home, as before. The address is checked here so a
 * typo is a usage error naming the flag, before anything opens; a password in it is never printed
 * (src/store/open.ts redacts it, and no message here repeats the value).
 */
import { DatabaseAddressError, parseDatabaseAddress } from "../store/open.js";
import { CliError } from "./errors.js";

/** The store address this invocation uses: the flag, else the environment, else undefined (the home's SQLite file). */
export function databaseOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromFlag = flag !== undefined && flag.trim() !== "";
  const raw = fromFlag ? flag : env.BERTH_DATABASE_URL;
  if (raw === undefined || raw.trim() === "") return undefined;
  try {
    parseDatabaseAddress(raw, "");
  } catch (error) {
    if (error instanceof DatabaseAddressError) {
      throw new CliError(`${fromFlag ? "--database" : "BERTH_DATABASE_URL"}: ${error.message.replace(/^database: /, "")}`, 2);
    }
    throw error;
  }
  return raw.trim();
}
