/** `berth completion bash|zsh|fish`: prints a completion script generated from berth's own command tree. */
import { Argument, type Command } from "commander";
import { commandTree } from "./command-tree.js";
import { completionScript, SHELLS, type Shell } from "./completion-scripts.js";
import { registerCompleteNames } from "./complete-names.js";
import { answer } from "./output.js";

const INSTALL = `
Install (then open a new shell):
  bash  echo 'source <(berth completion bash)' >> ~/.bashrc
        or: berth completion bash > ~/.local/share/bash-completion/completions/berth
  zsh   berth completion zsh > "\${fpath[1]}/_berth"        (with compinit enabled in ~/.zshrc)
        or: echo 'source <(berth completion zsh)' >> ~/.zshrc  (after the compinit line)
  fish  berth completion fish > ~/.config/fish/completions/berth.fish

The script is generated from the commands of this berth: generate it again after upgrading.`;

export function registerCompletionCommands(program: Command): void {
  registerCompleteNames(program);
  program
    .command("completion")
    .description("print a shell completion script for bash, zsh or fish")
    .addArgument(new Argument("<shell>", "the shell to complete in").choices(SHELLS))
    .option("--json", "print one JSON document: {shell, script}")
    .addHelpText("after", INSTALL)
    .action((shell: Shell, opts: { json?: boolean }) => {
      const script = completionScript(shell, commandTree(program));
      answer(opts.json, { shell, script }, script);
    });
}
