/**
 * Issue 12: every database and key berth writes is its owner's alone. A fresh home made by the CLI under a
 * permissive umask (022), with a node daemon running (its node.db-wal and -shm exist then), has no file that group
 * or others can read and no directory they can write.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/sqlite.js";
import { cleanup, MAIN, requireBuild, tempDir, waitFor } from "../mesh/harness.js";

afterAll(cleanup);

/** berth under umask 022 with BERTH_HOME set: the shell command line and its environment. */
function berthUnderUmask(home: string, args: string[]): { argv: string[]; env: NodeJS.ProcessEnv } {
  const quoted = [process.execPath, MAIN, ...args].map((a) => `'${a}'`).join(" ");
  return { argv: ["-c", `umask 022; exec ${quoted}`], env: { ...process.env, BERTH_HOME: home } };
}

function exposed(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) {
        if ((st.mode & 0o022) !== 0) found.push(`${path} (dir ${(st.mode & 0o777).toString(8)})`);
        walk(path);
      } else if ((st.mode & 0o077) !== 0) found.push(`${path} (${(st.mode & 0o777).toString(8)})`);
    }
  };
  walk(root);
  return found;
}

describe("file modes in a fresh berth home", () => {
  it("the CLI's keys, databases and a running node's WAL files are all 0600", async () => {
    requireBuild();
    const home = join(tempDir("berth-home-"), "home");
    // `nodes list --refresh` opens the controller, which makes the store; a plain `agents` then reads it read-only (issue 35),
    // and whatever SQLite makes beside it for a reader (-shm, an empty -wal) is judged by the same walk.
    for (const args of [
      ["keys", "new"],
      ["nodes", "list", "--refresh"],
      ["agents"],
      ["node", "init", "--data-dir", join(home, "node")],
    ]) {
      const { argv, env } = berthUnderUmask(home, args);
      const r = spawnSync("/bin/sh", argv, { env, encoding: "utf8" });
      expect(r.status, `berth ${args.join(" ")}: ${r.stderr}`).toBe(0);
    }
    const serve = berthUnderUmask(home, ["node", "serve", "--listen", "127.0.0.1:0", "--data-dir", join(home, "node")]);
    const daemon = spawn("/bin/sh", serve.argv, { env: serve.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    daemon.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    try {
      await waitFor(() => out.includes('"listening"'), "node serve to listen", 30_000);
      for (const f of ["node.db", "node.db-wal", "node.db-shm"])
        expect(existsSync(join(home, "node", f)), f).toBe(true);
      expect(
        ["controller.db", "keys/controller.key", "node/node.key"].filter((f) => !existsSync(join(home, f))),
      ).toEqual([]);
      expect(exposed(home)).toEqual([]);
    } finally {
      daemon.kill("SIGKILL");
    }
  }, 60_000);

  it("a database opened for writing is created 0600 with its -wal and -shm, whatever the umask", () => {
    const path = join(tempDir("berth-db-"), "any.db");
    const previous = process.umask(0);
    try {
      const db = openDatabase(path);
      db.exec("CREATE TABLE t (x)");
      db.prepare("INSERT INTO t VALUES (1)").run();
      try {
        for (const f of [path, `${path}-wal`, `${path}-shm`])
          expect((statSync(f).mode & 0o777).toString(8), f).toBe("600");
      } finally {
        db.close();
      }
    } finally {
      process.umask(previous);
    }
  });
});
