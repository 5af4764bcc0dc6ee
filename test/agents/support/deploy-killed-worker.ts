/**
 * `berth deploy SPEC --json` as the CLI runs it, in a process that SIGKILLs itself at the moment the registry would
 * take the agent's record (`AgentRegistry.remember`): after the node started the agent and the controller recorded
 * its placement, before `agent.remember`. It stands for the deploying server or CLI killed there (issue 37, campaign
 * seeds 11246 and 11525), so a test can judge from outside what is left.
 *
 *   node deploy-killed-worker.js <spec-file>      (BERTH_HOME names the home)
 */
import { AgentRegistry } from "../../../src/agents/registry.js";

const [spec] = process.argv.slice(2);
if (!spec) throw new Error("usage: deploy-killed-worker <spec-file>");

AgentRegistry.prototype.remember = () => {
  process.kill(process.pid, "SIGKILL");
  return new Promise(() => {});
};
// The CLI reads its command line from process.argv, as the `berth` executable's does.
process.argv = [process.argv[0] as string, "berth", "deploy", spec, "--json"];
const { runBerth } = await import("../../../src/cli/entry/berth-cli.js");
await runBerth(process.argv.slice(2));
