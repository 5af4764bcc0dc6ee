/**
 * `--database URL` / `$BERTH_DATABASE_URL` (issue 20): which store the controller's state is in, the same on every
 * verb, `berth serve` and `berth up`. Absent: the SQLite file in the home, as before. The address is checked here so a
 * typo is a usage error naming the flag, before anything opens; a password in it is never printed
 * (src/store/open.ts redacts it, and no message here repeats the value).
 */
import { readFileSync, statSync } from "node:fs";
import { DatabaseAddressError, parseDatabaseAddress } from "../store/open.js";
import { CliError } from "./errors.js";

/**
 * Issue 33 item 8: a password on the command line is in /proc/PID/cmdline, which every local user can read. The
 * flag may carry an address without one (the password then comes from PGPASSFILE or ~/.pgpass, which `pg` reads), or
 * `@FILE`, a file holding the address (refused when group or others may read it); BERTH_DATABASE_URL may carry it.
 */
export const PASSWORD_ON_COMMAND_LINE =
  "--database: the address holds a password, and a command line is readable by every user of this machine (/proc/PID/cmdline). Put the address in BERTH_DATABASE_URL, or in a file given as --database @FILE (mode 0600), or leave the password out and put it in PGPASSFILE (default ~/.pgpass)";

function hasPassword(raw: string): boolean {
  if (!/^postgres(ql)?:\/\//i.test(raw.trim())) return false;
  try {
    const u = new URL(raw.trim());
    return u.password !== "" || u.searchParams.has("password");
  } catch {
    // Not a URL `new URL` reads: judge the text, so a malformed address with a password is still refused.
    return /^postgres(ql)?:\/\/[^/@]*:[^/@]*@/i.test(raw.trim()) || /[?&]password=/i.test(raw);
  }
}

/** The address in `@FILE`: one line, the file the caller's alone (it may hold a password). */
function readAddressFile(path: string): string {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch (error) {
    throw new CliError(`--database @${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? "error"})`, 2);
  }
  if ((st.mode & 0o077) !== 0)
    throw new CliError(
      `--database @${path}: group or others may read it (mode ${(st.mode & 0o777).toString(8)}); chmod 600 ${path}`,
      2,
    );
  return readFileSync(path, "utf8").trim();
}

/** The store address this invocation uses: the flag, else the environment, else undefined (the home's SQLite file). */
export function databaseOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromFlag = flag !== undefined && flag.trim() !== "";
  if (fromFlag && !flag.trim().startsWith("@") && hasPassword(flag)) throw new CliError(PASSWORD_ON_COMMAND_LINE, 2);
  const raw = fromFlag
    ? flag.trim().startsWith("@")
      ? readAddressFile(flag.trim().slice(1))
      : flag
    : env.BERTH_DATABASE_URL;
  if (raw === undefined || raw.trim() === "") return undefined;
  try {
    parseDatabaseAddress(raw, "");
  } catch (error) {
    if (error instanceof DatabaseAddressError) {
      throw new CliError(
        `${fromFlag ? "--database" : "BERTH_DATABASE_URL"}: ${error.message.replace(/^database: /, "")}`,
        2,
      );
    }
    throw error;
  }
  return raw.trim();
}
