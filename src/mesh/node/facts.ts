/**
 * Node facts (spec/mesh.md §6): probed or configured, signed with tag `berth.facts.v1`. Board and labels can be set by
 * node.json or flags, so tests can simulate a Raspberry Pi on any machine.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { availableParallelism, cpus, freemem, loadavg, totalmem } from "node:os";
import { canonicalJson, type JsonObject } from "../../core/crypto/canonical.js";
import { type SigningKey, signTagged } from "../../core/crypto/ed25519.js";
import { archOfNode } from "../../core/packages/arch.js";
import type { SignedMessage } from "../../core/protocol/messages.js";

export function probeBoard(): string {
  if (process.platform === "darwin") return "dev";
  try {
    const model = readFileSync("/proc/device-tree/model", "utf8");
    if (model.includes("Raspberry Pi 5")) return "pi5";
    if (model.includes("Raspberry Pi 4")) return "pi4";
    if (model.includes("Raspberry Pi 3")) return "pi3";
    if (model.includes("Raspberry Pi Zero 2")) return "pi-zero2";
  } catch {
    // not a device-tree machine
  }
  return "generic";
}

export function availableMemory(): number {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "utf8"));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return freemem();
}

/** A measured figure: SHA-256 throughput of this host, in KiB/s × 1000 is overkill; MiB/s in thousandths. */
export function measureSha256(nowMs: number): JsonObject {
  const buf = Buffer.alloc(1024 * 1024, 7);
  const start = process.hrtime.bigint();
  let rounds = 0;
  while (process.hrtime.bigint() - start < 20_000_000n) {
    createHash("sha256").update(buf).digest();
    rounds++;
  }
  const ns = Number(process.hrtime.bigint() - start);
  return {
    metric: "sha256_mib_s",
    subject: "cpu",
    value_milli: Math.round((rounds / (ns / 1e9)) * 1000),
    direction: "higher",
    measured_at_ms: nowMs,
  };
}

export interface FactsInput {
  readonly nodeId: string;
  readonly bootId: string;
  readonly seq: number;
  readonly nowMs: number;
  readonly ttlS: number;
  readonly name: string;
  readonly board: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly interpreters: ReadonlyArray<{ name: string }>;
  readonly perf: readonly JsonObject[];
  readonly instances: number;
  /** Issue 16: the node lease, advertised so a controller can rely on it (§15); null without one. */
  readonly leaseMs: number | null;
  /** Issue 15: how this node contains what it runs (confine.ts `facts()`); `kind` is the headline. */
  readonly containment?: JsonObject;
}

export function buildFacts(input: FactsInput): JsonObject {
  const arch = archOfNode(process.arch) ?? "x86_64";
  const cpuList = cpus();
  return {
    version: 1,
    node_id: input.nodeId,
    boot_id: input.bootId,
    seq: input.seq,
    issued_at_ms: input.nowMs,
    ttl_s: input.ttlS,
    name: input.name,
    os: process.platform === "darwin" ? "darwin" : "linux",
    arch,
    board: input.board,
    cpu: {
      count: availableParallelism(),
      model: (cpuList[0]?.model ?? "unknown").slice(0, 128),
      load1_milli: Math.round((loadavg()[0] ?? 0) * 1000),
    },
    memory: { total_bytes: totalmem(), available_bytes: availableMemory() },
    accelerators: [],
    routes: [{ route: "native", arches: [arch] }],
    interpreters: input.interpreters.map((i) => ({ name: i.name, version: "unknown" })),
    labels: { ...input.labels },
    perf: [...input.perf],
    capabilities: [],
    lease_ms: input.leaseMs,
    instances: input.instances,
    ...(input.containment
      ? { containment: input.containment.kind ?? "process-group", confinement: input.containment }
      : {}),
  };
}

export function signFacts(key: SigningKey, facts: JsonObject): SignedMessage {
  const payload = canonicalJson(facts);
  return { payload, key: key.publicKey, sig: signTagged(key, "berth.facts.v1", payload) };
}
