/**
 * The Kubernetes half of the keep loop in `berth serve` (issue 16): every Kubernetes agent the registry knows is
 * kept "running exactly once" under its spec's restart policy. A watch on berth's pods in each namespace in use
 * (kubernetes/pod-watch.ts) and a periodic pass are only triggers; before anything is decided the agent's pod is read
 * with a quorum GET and verified (kubernetes/observe.ts, as the deploy loop does), and the pure `judgeAgentPod`
 * (core/kubernetes/keep-running.ts) gives the one verdict. A replace is the deploy verb itself (`deployAgent`), guarded
 * by the uid that was judged and attributed to the loop, so its fenced delete, create, `k8s.*` records and
 * `agent.deploy` event are exactly a verb's.
 *
 *   pass (every tickMs, leader only) ─► LIST per namespace ─┐
 *   watch wake (pod name) ──────────────────────────────────┴─► judge(agent): quorum GET ─► verify ─► judgeAgentPod
 *        ─► none | alert (chained once per distinct reason) | replace (unless backing off) ─► deployAgent(guard uid)
 *
 * - Leader only: a process that does not lead the store opens no watch and performs nothing (MeshController.isLeader,
 *   as the mesh loop's `shouldAct`); the check is repeated just before a replace.
 * - Backoff per agent (core/mesh/reschedule.ts `backoffMs`, 10 s doubling to 300 s): every replace counts as an
 *   attempt until the agent has been seen running for the cap, so a pod that exits at once is replaced at 10, 20, 40 …
 *   300 s, never in a tight loop (a kubelet's CrashLoopBackOff does the same); a failed replace is chained as an alert
 *   only when its reason changes (`chainsAlert`).
 * - One judgement per agent at a time; a wake during one makes exactly one more.
 * - Never from a watch payload, never on a read error, never on absence: the loop can only replace a verified pod it
 *   just saw terminated.
 */
import { BACKOFF_CAP_MS, backoffMs, chainsAlert } from "../../core/mesh/reschedule.js";
import { decodeStartup } from "../../core/kubernetes/decode.js";
import { judgeAgentPod, type KeepObservation, type ReplaceVerdict } from "../../core/kubernetes/keep-running.js";
import { type AgentIdentity, MANAGED_SELECTOR } from "../../core/kubernetes/naming.js";
import type { RestartPolicy } from "../../core/node/restart-policy.js";
import type { Cluster } from "../../kubernetes/cluster.js";
import { observePod } from "../../kubernetes/observe.js";
import { NamespacePodWatch } from "../../kubernetes/pod-watch.js";
import type { ClusterReach } from "../../agents/access.js";
import type { LoadedSpec } from "../../agents/spec-file.js";
import type { Result } from "../../kit/result.js";

/** A Kubernetes agent as the registry's spec describes it, resolved for the loop. */
export interface KeptAgent {
  readonly name: string;
  readonly loaded: LoadedSpec;
  readonly policy: RestartPolicy;
  readonly context: string | null;
  readonly namespace: string;
  readonly identity: AgentIdentity;
}

/** An acting row performed, or why it failed (a failed replace: backed off, chained once per distinct reason). */
export type ActionResult = Result<void>;

export interface KeeperPorts {
  readonly now: () => number;
  /** The leadership seam: false → no watch, no action. */
  shouldAct(): boolean | Promise<boolean>;
  /** The registry's Kubernetes agents, and those whose spec cannot be used now (why, for one alert each). */
  agents(): Promise<{
    readonly agents: readonly KeptAgent[];
    readonly unusable: ReadonlyArray<{ readonly name: string; readonly why: string }>;
  }>;
  /** A connection the keeper holds for its lifetime (one per context). */
  connect(context: string | null): Promise<ClusterReach>;
  /** The deploy verb on the agent, guarded by the judged pod's uid and attributed to the loop. */
  replace(agent: KeptAgent, verdict: ReplaceVerdict): Promise<ActionResult>;
  /** Chains one alert for the agent. */
  alert(
    agent: { readonly name: string; readonly namespace?: string; readonly pod?: string },
    reason: string,
    why: string,
  ): Promise<void>;
  log(message: string, fields?: Record<string, unknown>): void;
}

interface Memory {
  attempts: number;
  nextAttemptMs: number;
  lastAttemptMs: number;
  lastAlert: string | null;
}

export interface Judged {
  readonly agent: string;
  readonly verdict: "none" | "alert" | "replace" | "backing-off" | "unobserved" | "not-leader";
  readonly ok?: boolean;
  readonly why: string;
}

interface Place {
  readonly cluster: Cluster;
  readonly watches: Map<string, NamespacePodWatch>;
}

const contextKey = (context: string | null) => context ?? "";

export class KubernetesKeeper {
  private readonly memory = new Map<string, Memory>();
  private agents = new Map<string, KeptAgent>();
  private readonly places = new Map<string, Place>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private stopped = false;
  /** Every judgement, newest last (bounded), for tests and logs. */
  readonly judged: Judged[] = [];

  constructor(private readonly ports: KeeperPorts) {}

  /** One level-triggered pass: refresh the agents, keep a watch per namespace, LIST and judge what may need acting on. */
  async pass(): Promise<void> {
    if (this.stopped) return;
    if (!(await this.ports.shouldAct())) {
      this.closeWatches();
      return;
    }
    const { agents, unusable } = await this.ports.agents();
    for (const u of unusable) await this.alertOnce(u.name, {}, "spec_unusable", u.why);
    this.agents = new Map(agents.map((a) => [a.name, a]));
    for (const name of this.memory.keys())
      if (!this.agents.has(name) && !unusable.some((u) => u.name === name)) this.memory.delete(name);
    const byPlace = new Map<string, KeptAgent[]>();
    for (const a of agents) byPlace.set(contextKey(a.context), [...(byPlace.get(contextKey(a.context)) ?? []), a]);
    for (const [key, ofPlace] of byPlace) {
      const place = await this.placeFor(key, ofPlace[0]?.context ?? null);
      if (!place) continue;
      const namespaces = new Set(ofPlace.map((a) => a.namespace));
      for (const [ns, w] of place.watches) {
        if (!namespaces.has(ns)) {
          w.stop();
          place.watches.delete(ns);
        }
      }
      for (const ns of namespaces) {
        if (!place.watches.has(ns)) {
          const w = new NamespacePodWatch(place.cluster, ns, {
            onPod: (pod) => this.wake(key, ns, pod),
            onList: () => undefined,
            onError: (message) => this.ports.log(message),
            // What changed while the watch was away is known only by looking: the LIST that follows marks nothing
            // by itself, so every agent of the namespace is judged again.
            onRelist: () => {
              this.ports.log(`pod watch in ${ns}: resourceVersion too old (410 Gone); relisted`);
              for (const a of this.agents.values())
                if (contextKey(a.context) === key && a.namespace === ns) this.schedule(a.name);
            },
          });
          place.watches.set(ns, w);
          void w.start();
        }
        // The resync: one quorum LIST per namespace picks the agents whose pod may need a decision.
        const listed = await place.cluster.listPods(ns, MANAGED_SELECTOR);
        if (listed.kind === "error") {
          this.ports.log(`could not list pods in ${ns}; the watch still wakes the loop`);
          continue;
        }
        for (const a of ofPlace.filter((x) => x.namespace === ns)) {
          const pod = listed.items.find((p) => p.metadata.name === a.identity.podName);
          // A pod that is absent or running needs nothing (judgeAgentPod's rows), unless the agent owes a backoff reset.
          if (pod === undefined) continue;
          const d = decodeStartup(pod, "present");
          const running = d.kind === "decided" && d.startup.kind === "started" && !pod.metadata.deletionTimestamp;
          if (running && (this.memory.get(a.name)?.attempts ?? 0) === 0) continue;
          this.schedule(a.name);
        }
      }
    }
    await this.settled();
  }

  /** Waits for every judgement in flight (and those they scheduled). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()]);
  }

  private async placeFor(key: string, context: string | null): Promise<Place | undefined> {
    const have = this.places.get(key);
    if (have) return have;
    const c = await this.ports.connect(context);
    if (!c.ok) {
      this.ports.log(`could not reach the cluster ${context ?? "(current context)"}: ${c.error}`);
      return undefined;
    }
    const place = { cluster: c.value, watches: new Map<string, NamespacePodWatch>() };
    this.places.set(key, place);
    return place;
  }

  private wake(key: string, ns: string, pod: string): void {
    for (const a of this.agents.values()) {
      if (contextKey(a.context) === key && a.namespace === ns && a.identity.podName === pod) this.schedule(a.name);
    }
  }

  private schedule(name: string): void {
    if (this.stopped) return;
    if (this.inFlight.has(name)) {
      this.again.add(name);
      return;
    }
    const run = (async () => {
      try {
        do {
          this.again.delete(name);
          await this.judge(name);
        } while (this.again.has(name) && !this.stopped);
      } catch (error) {
        this.ports.log(`judging ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        this.inFlight.delete(name);
      }
    })();
    this.inFlight.set(name, run);
  }

  private record(j: Judged): void {
    this.judged.push(j);
    if (this.judged.length > 1000) this.judged.splice(0, this.judged.length - 1000);
  }

  private memoryOf(name: string): Memory {
    let m = this.memory.get(name);
    if (!m) {
      m = { attempts: 0, nextAttemptMs: 0, lastAttemptMs: 0, lastAlert: null };
      this.memory.set(name, m);
    }
    return m;
  }

  private async alertOnce(
    name: string,
    where: { namespace?: string; pod?: string },
    reason: string,
    why: string,
  ): Promise<boolean> {
    const m = this.memoryOf(name);
    if (!chainsAlert(m.lastAlert, reason)) return false;
    await this.ports.alert({ name, ...where }, reason, why);
    m.lastAlert = reason;
    return true;
  }

  private async judge(name: string): Promise<void> {
    const agent = this.agents.get(name);
    const place = agent ? this.places.get(contextKey(agent.context)) : undefined;
    if (!agent || !place || this.stopped) return;
    if (!(await this.ports.shouldAct()))
      return this.record({ agent: name, verdict: "not-leader", why: "this process does not lead the store" });
    const where = { namespace: agent.namespace, pod: agent.identity.podName };
    // The quorum GET (and, for a pod that needs it, the Secret read) the deploy loop makes: nothing else is evidence.
    const seen = await observePod(place.cluster, agent.namespace, agent.identity);
    if (seen.kind === "error") return this.record({ agent: name, verdict: "unobserved", why: seen.message });
    const observed: KeepObservation =
      seen.kind === "verified" ? { kind: "verified", pod: seen.pod, raw: seen.raw } : { kind: seen.kind };
    const verdict = judgeAgentPod(observed, agent.policy);
    const m = this.memoryOf(name);
    const now = this.ports.now();
    switch (verdict.kind) {
      case "none":
        // Seen running for the backoff cap since the last replace: the agent is healthy again.
        if (
          seen.kind === "verified" &&
          seen.pod.startup.kind === "started" &&
          now - m.lastAttemptMs >= BACKOFF_CAP_MS
        ) {
          m.attempts = 0;
          m.nextAttemptMs = 0;
          m.lastAlert = null;
        }
        return this.record({ agent: name, verdict: "none", why: verdict.why });
      case "alert":
        await this.alertOnce(name, where, verdict.reason, verdict.why);
        return this.record({ agent: name, verdict: "alert", why: verdict.why });
      case "replace": {
        if (now < m.nextAttemptMs)
          return this.record({
            agent: name,
            verdict: "backing-off",
            why: `next attempt in ${Math.ceil((m.nextAttemptMs - now) / 1000)} s`,
          });
        m.attempts++;
        m.lastAttemptMs = now;
        m.nextAttemptMs = now + backoffMs(m.attempts);
        const result = await this.ports.replace(agent, verdict);
        if (result.ok) {
          this.ports.log(`replaced ${verdict.name} of ${name}: ${verdict.why}`);
          return this.record({ agent: name, verdict: "replace", ok: true, why: verdict.why });
        }
        await this.alertOnce(name, where, `action_failed:${result.error}`, `replace failed: ${result.error}`);
        return this.record({ agent: name, verdict: "replace", ok: false, why: result.error });
      }
      default: {
        const never: never = verdict;
        throw new Error(`unreachable verdict ${JSON.stringify(never)}`);
      }
    }
  }

  private closeWatches(): void {
    for (const place of this.places.values()) {
      for (const w of place.watches.values()) w.stop();
      place.watches.clear();
    }
  }

  /**
   * Stops every watch, waits for judgements in flight — at most `graceMs`: a replace waits for its pod to start, up to
   * the deploy deadline, and a server's shutdown must not. One cut short leaves what a killed verb leaves: its
   * write-ahead intent records, and a pod the next deploy or pass judges afresh.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopped = true;
    this.closeWatches();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.inFlight.values()]),
      new Promise((r) => {
        timer = setTimeout(r, graceMs);
      }),
    ]);
    if (timer) clearTimeout(timer);
    for (const place of this.places.values()) place.cluster.close();
    this.places.clear();
  }

  /** Watch counters per namespace (tests). */
  watchStats(): Record<string, NamespacePodWatch["stats"] & { open: boolean }> {
    const out: Record<string, NamespacePodWatch["stats"] & { open: boolean }> = {};
    for (const [key, place] of this.places)
      for (const [ns, w] of place.watches) out[`${key}/${ns}`] = { ...w.stats, open: w.open };
    return out;
  }
}
