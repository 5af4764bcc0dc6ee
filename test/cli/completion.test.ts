/**
 * `berth completion bash|zsh|fish`: scripts generated from the command tree that the shells accept and that
 * complete berth's words. bash is checked by running its completion function; zsh and fish by their own parsers
 * (and fish's completer) where they are installed.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { berth, onPath, removeHomes, tempHome } from "./support.js";

let dir: string;
const scripts: Record<string, string> = {};

beforeAll(async () => {
  dir = tempHome();
  for (const shell of ["bash", "zsh", "fish"]) {
    const r = await berth(dir, ["completion", shell]);
    expect(r.code, r.stderr).toBe(0);
    scripts[shell] = join(dir, `berth.${shell}`);
    writeFileSync(scripts[shell] as string, r.stdout);
  }
});
afterAll(removeHomes);

/** What bash offers after the words of `line` (a trailing space starts a new word). */
function bashComplete(line: string): string[] {
  const program = `source "$1"; read -ra COMP_WORDS <<< "$2"; [[ "$2" == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _berth; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync("bash", ["-c", program, "bash", scripts.bash as string, line], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean)
    .sort();
}

// zsh and fish are optional on a developer machine; CI must have them (it installs them like chromium).
const shellPresent = (shell: string) => onPath(shell) || Boolean(process.env.CI);

describe("berth completion", () => {
  it("bash accepts the script", () => {
    execFileSync("bash", ["-n", scripts.bash as string]);
  });

  it("bash completes `berth ag` to agent and agents", () => {
    expect(bashComplete("berth ag")).toEqual(["agent", "agents"]);
  });

  it("bash completes subcommands, options and an argument's choices from the tree", () => {
    expect(bashComplete("berth audit v")).toEqual(["verify"]);
    expect(bashComplete("berth audit verify --json --k")).toEqual(["--key", "--key-file"]);
    expect(bashComplete("berth agent ")).toEqual([
      "delete",
      "history",
      "logs",
      "purge",
      "replace",
      "rollback",
      "start",
      "status",
      "stop",
    ]);
    expect(bashComplete("berth completion ")).toEqual(["bash", "fish", "zsh"]);
    // Issue 36: `nodes remove` takes a forgotten node off the list.
    expect(bashComplete("berth nodes ")).toEqual(["add", "help", "list", "remove", "tier"]);
    // After the choice comes a free argument (the agent's name): nothing from berth's words.
    expect(bashComplete("berth agent status ")).toEqual([]);
  });

  it("every top-level command is in every shell's script", async () => {
    const help = await berth(dir, ["completion", "bash", "--json"]);
    const bash = (JSON.parse(help.stdout) as { script: string }).script;
    const top =
      /\n {4}''\) echo (.*) ;;/
        .exec(bash)?.[1]
        ?.split(" ")
        .map((w) => w.replace(/'/g, "")) ?? [];
    expect(top).toEqual(
      expect.arrayContaining(["deploy", "agents", "agent", "nodes", "k8s", "audit", "keys", "completion"]),
    );
    const zsh = (await berth(dir, ["completion", "zsh"])).stdout;
    const fish = (await berth(dir, ["completion", "fish"])).stdout;
    for (const name of top) {
      expect(zsh, `zsh: ${name}`).toContain(`'${name}:`);
      expect(fish, `fish: ${name}`).toContain(`-a '${name}'`);
    }
  });

  it.skipIf(!shellPresent("zsh"))(
    "zsh accepts the script, and its walk offers an argument's choices and a verb's options",
    () => {
      execFileSync("zsh", ["-n", scripts.zsh as string]);
      // compsys needs an interactive shell: _describe and _files are stood in for by functions that print what they get.
      const offered = (...words: string[]) =>
        execFileSync(
          "zsh",
          [
            "-c",
            `compdef() { :; }; _describe() { shift 3; print -l -- \${(P)1}; }; _files() { print FILES; }; compadd() { shift; print -l -- NAMES \${(P)1}; }; source "$1"; shift; words=("$@"); CURRENT=$#; _berth`,
            "zsh",
            scripts.zsh as string,
            ...words,
          ],
          { encoding: "utf8" },
        )
          .split("\n")
          .filter(Boolean)
          .map((l) => l.split(":")[0]);
      expect(offered("berth", "agent", "")).toEqual([
        "status",
        "logs",
        "stop",
        "start",
        "replace",
        "purge",
        "delete",
        "history",
        "rollback",
      ]);
      expect(offered("berth", "audit", "verify", "--j")).toContain("--json");
      // After the verb comes the agent's name, asked of `berth __complete agents` (none here: berth is not on PATH).
      expect(offered("berth", "agent", "status", "")).toEqual(["NAMES"]);
      expect(offered("berth", "deploy", "")).toEqual(["FILES"]);
    },
  );

  it.skipIf(!shellPresent("fish"))("fish accepts the script and completes `berth ag` and `berth agent `", () => {
    execFileSync("fish", ["-n", scripts.fish as string]);
    const complete = (line: string) =>
      execFileSync("fish", ["-c", `source ${scripts.fish}; complete -C '${line}'`], { encoding: "utf8" })
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split("\t")[0])
        .sort();
    expect(complete("berth ag")).toEqual(["agent", "agents"]);
    expect(complete("berth agent ")).toEqual([
      "delete",
      "history",
      "logs",
      "purge",
      "replace",
      "rollback",
      "start",
      "status",
      "stop",
    ]);
  });

  it("says how to install it", async () => {
    const r = await berth(dir, ["completion", "--help"]);
    expect(r.stdout).toMatch(/Install/);
    for (const line of [
      "source <(berth completion bash)",
      "berth completion zsh >",
      "berth completion fish > ~/.config/fish/completions/berth.fish",
    ])
      expect(r.stdout).toContain(line);
  });
});

describe("completion of names", () => {
  it("offers the contexts after `berth context use` and the agents after `berth agent logs`, asked of berth itself", async () => {
    const home = tempHome();
    const bin = join(home, "bin");
    const { mkdirSync, chmodSync } = await import("node:fs");
    mkdirSync(bin);
    const { berthBin } = await import("../support/built.js");
    writeFileSync(
      join(bin, "berth"),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(berthBin())} "$@"\n`,
    );
    chmodSync(join(bin, "berth"), 0o755);
    const token = join(home, "token");
    writeFileSync(token, `${"t".repeat(43)}\n`, { mode: 0o600 });
    for (const name of ["lab", "prod"]) {
      const r = await berth(home, [
        "context",
        "add",
        name,
        "--server",
        "http://127.0.0.1:9",
        "--token-file",
        token,
        "--no-check",
      ]);
      expect(r.code, r.stderr).toBe(0);
    }
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, BERTH_HOME: home };
    const complete = (line: string) => {
      const program = `source "$1"; read -ra COMP_WORDS <<< "$2"; [[ "$2" == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _berth; printf '%s\\n' "\${COMPREPLY[@]}"`;
      return execFileSync("bash", ["-c", program, "bash", scripts.bash as string, line], { encoding: "utf8", env })
        .split("\n")
        .filter(Boolean)
        .sort();
    };
    expect(complete("berth context use ")).toEqual(["lab", "local", "prod"]);
    expect(complete("berth context use p")).toEqual(["prod"]);
    // An agent registry with one agent, read read-only (no controller is opened).
    const Database = (await import("better-sqlite3")).default;
    const db = new Database(join(home, "agents.db"));
    db.exec("CREATE TABLE agents (name TEXT PRIMARY KEY)");
    db.prepare("INSERT INTO agents (name) VALUES (?)").run("scout");
    db.close();
    const local = { ...env, BERTH_CONTEXTS: join(home, "none.json") };
    const agentNames = execFileSync(
      "bash",
      [
        "-c",
        `source "$1"; COMP_WORDS=(berth agent logs ""); COMP_CWORD=3; _berth; printf '%s\\n' "\${COMPREPLY[@]}"`,
        "bash",
        scripts.bash as string,
      ],
      { encoding: "utf8", env: local },
    );
    expect(agentNames.split("\n").filter(Boolean)).toEqual(["scout"]);
    // After the name, nothing more is a name.
    const after = execFileSync(
      "bash",
      [
        "-c",
        `source "$1"; COMP_WORDS=(berth agent logs scout ""); COMP_CWORD=4; _berth; printf '%s\\n' "\${COMPREPLY[@]}"`,
        "bash",
        scripts.bash as string,
      ],
      { encoding: "utf8", env: local },
    );
    expect(after.trim()).toBe("");
  });
});
