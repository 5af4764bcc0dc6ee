/**
 * `berth k8s deploy|status|list|logs|stop|replace` (spec/kubernetes.md §16): the operator's verbs on berth's own CLI,
 * never reachable through the provider protocol. Wiring only: decisions live in core/kubernetes, effects in
 * src/kubernetes. Human output by default, one JSON document with `--json`.
 *
 * (About 490 lines, one concept: the Kubernetes verb group; each verb is its options and its rendering.)
 */
import { readFileSync } from "node:fs";
import { type Command, Option } from "commander";
import type { DesiredIntent } from "../core/kubernetes/intent.js";
import type { Cluster } from "../kubernetes/cluster.js";
import type { Prepared } from "../kubernetes/prepare.js";
import type { K8sAudit } from "../kubernetes/audit.js";
import type { AgentRef, VerbDeps } from "../kubernetes/verbs.js";
import { connect } from "./cluster-connect.js";
import { CliError, describeZodIssues, invalidInput } from "./errors.js";
import { kubeContextFlag } from "./flags.js";
import type * as K8sDeps from "./k8s-deps.js";
import { unreadable } from "../kit/file-errors.js";
import { err, ok, type Result } from "../kit/result.js";
import { describeText } from "./describe.js";
import { answer, answerRefusal } from "./output.js";
import { berthHome } from "./paths.js";
import { startProgress } from "./progress.js";
import { paintState, stdoutPalette } from "./style.js";
import { renderTable } from "./table.js";
import { berthVersion } from "../version.js";

interface AgentFlags {
  local?: boolean;
  file?: string;
  pubkey?: string;
  namespace?: string;
  context?: string;
  kubeContext?: string;
  json?: boolean;
}

/** Loads the libraries and folds the old --context spelling into --kube-context. */
async function ready<T extends { context?: string; kubeContext?: string }>(opts: T): Promise<T> {
  await load();
  const context = opts.kubeContext ?? opts.context;
  return context === undefined ? opts : { ...opts, context };
}

// The Kubernetes side's libraries, loaded when a k8s verb runs (issue 19: registration stays light).
let d: typeof K8sDeps;
const load = async () => {
  d = await import("./k8s-deps.js");
};

const flagsSchema = () =>
  d.z.object({
    pubkey: d.z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (the agent's x-only public key)"),
    namespace: d.z
      .string()
      .refine(
        d.isValidNamespace,
        "must be a valid Kubernetes namespace (lowercase alphanumerics and '-', ≤63 characters)",
      ),
    context: d.z.string().min(1).optional(),
  });

/** The raw documents each deploy file was read as, for sending it to a server as JSON. */
const rawOf = new WeakMap<Prepared, unknown>();

function readDeployFile(path: string, requireCommand: boolean): Prepared {
  let text: string;
  try {
    // `-` is stdin (issue 13: `-f -`), read as YAML (JSON is YAML too).
    text = readFileSync(path === "-" ? 0 : path, "utf8");
  } catch (error) {
    throw new CliError(unreadable(path, error, "the deploy file"), 2, { kind: "file" });
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(path) ? JSON.parse(text) : d.parseYaml(text);
  } catch (error) {
    throw new CliError(
      `${path} is not valid ${/\.json$/i.test(path) ? "JSON" : "YAML"}: ${(error as Error).message.split("\n")[0]}`,
    );
  }
  // An agent spec (berth/v1 Agent) is `berth deploy`'s, not this provider-format file's: say which verb takes it.
  if (typeof raw === "object" && raw !== null && (raw as { kind?: unknown }).kind === "Agent") {
    throw new CliError(
      `${path} is an agent spec (kind: Agent): deploy it with \`berth deploy ${path}\`; \`berth k8s deploy\` takes the provider's deploy request (docs/kubernetes.md)`,
      2,
      { kind: "validation" },
    );
  }
  const prepared = d.prepareDeploy(raw, { requireCommand });
  rawOf.set(prepared, raw);
  return prepared;
}

type Remote = { t: import("./remote/http.js").ServerTarget; r: typeof import("./k8s-remote.js") };

/**
 * Issue 13: the `berth serve` these verbs go through (a context, BERTH_ADDR, the home's running serve), or null for
 * this machine's kubeconfig. A server uses its own kubeconfig, so a kubeconfig context named here is refused.
 */
async function k8sServer(opts: { local?: boolean; context?: string; kubeContext?: string }): Promise<Remote | null> {
  const { serverFor } = await import("./remote/server-verb.js");
  const remote = await serverFor({ local: opts.local === true });
  if (!remote) return null;
  const named = opts.kubeContext ?? opts.context;
  if (named !== undefined)
    throw new CliError(
      `--kube-context ${named}: through a server (${remote.server.via}) the cluster is the one the server's kubeconfig names; drop it, or run on this machine's kubeconfig with --local`,
      2,
      { kind: "usage" },
    );
  return { t: remote.server, r: await import("./k8s-remote.js") };
}

const at = (agent: { ref: AgentRef }) => ({
  pubkey: agent.ref.identity.pubkey as string,
  podName: agent.ref.identity.podName,
  namespace: agent.ref.namespace,
});
const LOCAL_FLAG = "use this machine's kubeconfig and home, not the current context or the running `berth serve`";

function resolveAgent(flags: AgentFlags): {
  ref: AgentRef;
  context: string | null;
  intent: DesiredIntent | null;
  prepared?: Prepared & { ok: true };
} {
  if (flags.file) {
    const prepared = readDeployFile(flags.file, false);
    if (!prepared.ok) throw new CliError(prepared.error, 1);
    return {
      ref: { identity: prepared.value.inputs.identity, namespace: prepared.value.inputs.config.namespace },
      context: flags.context ?? prepared.value.inputs.config.context,
      intent: prepared.value.intent,
      prepared,
    };
  }
  // A pod name alone (48 bits) is never enough: the full pubkey and the namespace are required.
  const parsed = flagsSchema().safeParse({ pubkey: flags.pubkey, namespace: flags.namespace, context: flags.context });
  if (!parsed.success)
    throw new CliError(
      `${describeZodIssues("agent", parsed.error.issues)} (give --file FILE, or --pubkey and --namespace)`,
    );
  const id = d.identityFromPubkeyHex(parsed.data.pubkey);
  if (!id.ok) throw new CliError("--pubkey must be 64 lowercase hex characters");
  return {
    ref: { identity: id.value, namespace: parsed.data.namespace },
    context: parsed.data.context ?? null,
    intent: null,
  };
}

async function connected(context: string | null): Promise<Cluster> {
  const c = await connect(context);
  if (!c.ok) throw new CliError(c.error, 1);
  return c.value;
}

function settings() {
  const s = d.settingsFromEnv(process.env);
  if (!s.ok) throw new CliError(s.error);
  return s.value;
}

/** The home's k8s.db, or the controller store's chain when that is PostgreSQL (k8s-audit.ts). */
async function openAudit(): Promise<K8sAudit> {
  return d.openCliK8sAudit({ home: berthHome() });
}

async function verbDeps(cluster: Cluster): Promise<VerbDeps & { close: () => Promise<void> }> {
  let audit: K8sAudit;
  try {
    audit = await openAudit();
  } catch (error) {
    cluster.close();
    throw new CliError(`could not open the audit chain: ${(error as Error).message}`, 1);
  }
  return {
    cluster,
    clock: d.realClock,
    audit,
    log: d.boundedStderrLogger(),
    version: berthVersion(),
    close: () => audit.close(),
  };
}

/** The started agent's id (its pod's name), or why it did not start. */
type Answer = Result<string>;

/** §3.2 stages 10–12 in CLI mode: open the audit chain, connect, converge; every failure is an answer. */
async function runDeploy(
  inputs: Prepared & { ok: true },
  context: string | null,
  json: boolean | undefined,
): Promise<Answer> {
  const s = settings();
  let audit: K8sAudit;
  try {
    audit = await openAudit();
  } catch (error) {
    return err(`could not open the audit chain: ${(error as Error).message}`);
  }
  try {
    const c = await connect(context);
    if (!c.ok) return err(c.error);
    const cluster = c.value;
    const progress = startProgress({ json });
    try {
      // Progress shows the latest condition while waiting (never kubelet messages: latestCondition omits them).
      const report = await d.runConvergeLoop(
        { cluster, clock: d.realClock, audit, log: d.boundedStderrLogger(), version: berthVersion() },
        inputs.value.inputs,
        {
          settings: s,
          onProgress: (line) => progress.update(line),
        },
      );
      return report.answer.ok ? ok(report.answer.agentId) : err(report.answer.error);
    } finally {
      progress.stop();
      cluster.close();
    }
  } finally {
    await audit.close();
  }
}

const agentOptions = (cmd: Command) =>
  kubeContextFlag(cmd, "kubeconfig context")
    .option("--file <file>", "the agent's deploy file (YAML or JSON, shaped like the provider's deploy request)")
    .option("--pubkey <hex>", "the agent's 64-hex public key (for agents berth did not deploy)")
    .option("--namespace <ns>", "the agent's namespace (with --pubkey)")
    .option("--local", LOCAL_FLAG)
    .option("--json", "one JSON document instead of text");

export function registerK8sCommands(program: Command): void {
  const k8s = program
    .command("k8s")
    .description("operate agents on Kubernetes: deploy, status, list, logs, stop, replace");

  k8s
    .command("deploy <file>")
    .description(
      "deploy the agent described by FILE (YAML or JSON; - reads stdin) and wait until it starts or the deadline passes",
    )
    .option("--local", LOCAL_FLAG)
    .option("--json", "one JSON document instead of text")
    .action(async (file: string, opts: { json?: boolean; local?: boolean }) => {
      await load();
      const prepared = readDeployFile(file, true);
      if (!prepared.ok) {
        answerRefusal(opts.json, { ok: false, error: prepared.error }, prepared.error);
        process.exitCode = 1;
        return;
      }
      const remote = await k8sServer(opts);
      if (remote) {
        const { withSpinner } = await import("./progress.js");
        const r = await withSpinner(
          `deploying ${prepared.value.inputs.identity.podName} through ${remote.t.url}`,
          opts.json,
          () => remote.r.deployThrough(remote.t, rawOf.get(prepared)),
        );
        if (r.ok) answer(opts.json, { ok: true, agent_id: r.agent_id }, `started ${r.agent_id}`);
        else answerRefusal(opts.json, { ok: false, error: r.error }, String(r.error));
        process.exitCode = r.ok ? 0 : 1;
        return;
      }
      const a = await runDeploy(prepared, prepared.value.inputs.config.context, opts.json);
      if (a.ok) answer(opts.json, { ok: true, agent_id: a.value }, `started ${a.value}`);
      else answerRefusal(opts.json, { ok: false, error: a.error }, a.error);
      process.exitCode = a.ok ? 0 : 1;
    });

  agentOptions(k8s.command("status").description("what the cluster says about one agent (reads only)")).action(
    async (given: AgentFlags) => {
      const opts = await ready(given);
      const agent = resolveAgent(opts);
      // Issue 36 item 9: describe lines made from the document -o json prints, the same through a server.
      const print = (r: Record<string, unknown>) => answer(opts.json, r, describeText(r));
      const remote = await k8sServer(given);
      if (remote) {
        print(await remote.r.statusThrough(remote.t, at(agent)));
        return;
      }
      const cluster = await connected(agent.context);
      try {
        const r = await d.status({ cluster, clock: d.realClock }, agent.ref, agent.intent);
        if ("error" in r) throw new CliError(r.error, 1);
        print(r as unknown as Record<string, unknown>);
      } finally {
        cluster.close();
      }
    },
  );

  k8s
    .command("list")
    .description("agent pods managed by berth or Buzz (quorum LIST by the managed-by label)")
    .option("--namespace <ns>", "one namespace")
    .option("--all-namespaces", "every namespace (needs cluster-wide list on pods)")
    .option("--kube-context <ctx>", "kubeconfig context")
    .addOption(new Option("--context <ctx>", "alias of --kube-context").hideHelp())
    .option(
      "-l, --selector <selector>",
      "only the pods whose labels match (key=value, key!=value, key, !key; commas: all must hold): the binding's labels, the only ones berth puts on a pod (an agent's metadata.labels: `berth agents -l`)",
    )
    .option("--local", LOCAL_FLAG)
    .option("--json", "one JSON document instead of text")
    .action(
      async (given: {
        namespace?: string;
        allNamespaces?: boolean;
        context?: string;
        kubeContext?: string;
        local?: boolean;
        json?: boolean;
        selector?: string;
      }) => {
        const opts = await ready(given);
        if (!opts.allNamespaces && !opts.namespace) throw new CliError("give --namespace NS or --all-namespaces");
        if (opts.namespace && !d.isValidNamespace(opts.namespace))
          throw new CliError(`--namespace ${JSON.stringify(opts.namespace)} is not a valid Kubernetes namespace`);
        // Issue 36: judged here, so a bad selector reads the same locally and through a server.
        const { parseSelector } = await import("../core/agents/labels.js");
        const selector = parseSelector(opts.selector ?? "");
        if (!selector.ok) throw invalidInput(`-l: ${selector.error}`);
        const remote = await k8sServer(given);
        const cluster = remote ? null : await connected(opts.context ?? null);
        try {
          const ns = opts.allNamespaces ? null : (opts.namespace ?? null);
          const rows = remote
            ? await remote.r.listThrough(remote.t, ns, opts.selector)
            : await d.list(cluster as Cluster, ns, selector.value);
          if ("error" in rows) throw new CliError(rows.error, 1);
          const palette = stdoutPalette(opts.json);
          const table = renderTable(
            ["NAME", "NAMESPACE", "BINDING", "STARTUP", "REGISTRY"],
            rows.map((r) => [r.name, r.namespace, r.binding, r.startup, r.registry]),
            { palette, paint: (column, text) => (column === 3 ? paintState(palette, text) : text) },
          );
          answer(opts.json, rows, rows.length === 0 ? "no agent pods" : table);
        } finally {
          cluster?.close();
        }
      },
    );

  agentOptions(k8s.command("logs").description("the agent container's log, to this terminal only"))
    .option("-f, --follow", "keep streaming (not with --json)")
    .option("-n, --tail <n>", "only the last N lines")
    .action(async (given: AgentFlags & { follow?: boolean; tail?: string }) => {
      const opts = await ready(given);
      const tail = opts.tail === undefined ? undefined : d.z.coerce.number().int().min(0).safeParse(opts.tail);
      if (tail && !tail.success) throw new CliError("--tail must be a non-negative integer");
      if (opts.follow && opts.json)
        throw new CliError(
          "--follow streams the log as it comes and --json prints one document at the end: give one of them",
        );
      let log = "";
      const agent = resolveAgent(opts);
      const remote = await k8sServer(given);
      if (remote) {
        const lines = tail?.success ? tail.data : undefined;
        const first = await remote.r.logThrough(remote.t, at(agent), lines);
        if (opts.json) {
          answer(true, { pod: agent.ref.identity.podName, namespace: agent.ref.namespace, log: first }, "");
          return;
        }
        process.stdout.write(first);
        if (!opts.follow) return;
        const pod = agent.ref.identity.podName;
        await (await import("./watch.js")).followLog(
          1000,
          async () => ({ instance: pod, stdout: await remote.r.logThrough(remote.t, at(agent), lines), stderr: "" }),
          { instance: pod, stdout: first, stderr: "" },
        );
        return;
      }
      const cluster = await connected(agent.context);
      try {
        const r = await cluster.readLog(agent.ref.namespace, agent.ref.identity.podName, {
          follow: Boolean(opts.follow),
          ...(tail?.success ? { tailLines: tail.data } : {}),
          onChunk: (c) => {
            if (opts.json) log += c;
            else process.stdout.write(c);
          },
        });
        if (r.kind === "absent")
          throw new CliError(
            `${agent.ref.identity.podName} does not exist; \`berth k8s list\` shows the agent pods`,
            1,
          );
        if (r.kind === "error")
          throw new CliError(
            `could not read the log: ${r.error.kind === "status" ? `${r.error.reason}: ${r.error.message}` : r.error.message}`,
            1,
          );
        if (opts.json) answer(true, { pod: agent.ref.identity.podName, namespace: agent.ref.namespace, log }, "");
      } finally {
        cluster.close();
      }
    });

  agentOptions(
    k8s
      .command("stop")
      .description("fenced, audited delete of the agent's pod in any state (its 60 s shutdown budget applies)"),
  )
    .option("--wait", "wait for the pod to disappear, then remove its Secret")
    .action(async (given: AgentFlags & { wait?: boolean }) => {
      const opts = await ready(given);
      const agent = resolveAgent(opts);
      const remote = await k8sServer(given);
      if (remote) {
        const r = await remote.r.stopThrough(remote.t, at(agent), Boolean(opts.wait));
        if (r.ok) answer(opts.json, r, r.message);
        else answerRefusal(opts.json, r, r.message);
        process.exitCode = r.ok ? 0 : 1;
        return;
      }
      const cluster = await connected(agent.context);
      const deps = await verbDeps(cluster);
      try {
        const r = await d.stop(deps, agent.ref, { wait: Boolean(opts.wait) });
        if (r.ok) answer(opts.json, r, r.message);
        else answerRefusal(opts.json, r, r.message);
        process.exitCode = r.ok ? 0 : 1;
      } finally {
        cluster.close();
        await deps.close();
      }
    });

  k8s
    .command("replace")
    .description("fenced re-create of a never-started pod (the escape from a pull failure); refuses a started pod")
    .requiredOption("--file <file>", "the agent's deploy file (its inputs are needed for the new attempt)")
    .option("--kube-context <ctx>", "kubeconfig context")
    .addOption(new Option("--context <ctx>", "alias of --kube-context").hideHelp())
    .option("--local", LOCAL_FLAG)
    .option("--json", "one JSON document instead of text")
    .action(async (given: AgentFlags & { local?: boolean }) => {
      const opts = await ready(given);
      const agent = resolveAgent(opts);
      const prepared = agent.prepared;
      if (!prepared) throw new CliError("replace needs --file");
      const remote = await k8sServer(given);
      if (remote) {
        const r = await remote.r.replaceThrough(remote.t, at(agent), rawOf.get(prepared));
        if (r.ok) answer(opts.json, { ok: true, agent_id: r.agent_id }, `replaced: started ${r.agent_id}`);
        else answerRefusal(opts.json, { ok: false, error: r.error }, String(r.error));
        process.exitCode = r.ok ? 0 : 1;
        return;
      }
      const cluster = await connected(agent.context);
      const deps = await verbDeps(cluster);
      let outcome: { ok: boolean; message: string };
      let actionId: string;
      try {
        actionId = await d.replaceAuditStart(deps, agent.ref);
        outcome = await d.clearForReplace(deps, agent.ref, actionId, settings().deadlineSeconds * 1000);
      } finally {
        cluster.close();
      }
      if (!outcome.ok) {
        await d.replaceAuditEnd(deps, agent.ref, actionId, { ok: false, message: outcome.message });
        await deps.close();
        answerRefusal(opts.json, { ok: false, error: outcome.message }, outcome.message);
        process.exitCode = 1;
        return;
      }
      await deps.close();
      const a = await runDeploy(prepared, agent.context, opts.json);
      const end = await verbDeps(await connected(agent.context));
      try {
        await d.replaceAuditEnd(
          end,
          agent.ref,
          actionId,
          a.ok ? { ok: true, message: a.value } : { ok: false, message: a.error },
        );
      } finally {
        end.cluster.close();
        await end.close();
      }
      if (a.ok) answer(opts.json, { ok: true, agent_id: a.value }, `replaced: started ${a.value}`);
      else answerRefusal(opts.json, { ok: false, error: a.error }, a.error);
      process.exitCode = a.ok ? 0 : 1;
    });
}
