/**
 * The network world's kernel plumbing (issue 37), shell only: a bridge the campaign owns, one network namespace per
 * node joined to it by a veth pair, and the kernel faults struck inside a node's namespace — nftables drops (both
 * ways, one way, one port, a TCP reset), `tc netem` on its link, conntrack flushes, its interface taken down — plus a
 * small tmpfs per node data directory (filled to ENOSPC as a fault).
 *
 * Every name carries the world's tag (`bw<tag>…`), and `leftovers(tag)` lists, from outside, whatever of a tag is
 * still on the machine (namespaces, links, mounts), so a test can judge that a world cleaned up after itself. Nothing
 * leaves the namespaces and the bridge: the bridge has no uplink and forwarding is not enabled.
 */
import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

/** Runs a command; throws with its stderr on failure. */
export async function sh(cmd: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await exec(cmd, [...args], { encoding: "utf8", timeout: 20_000 });
    return stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(" ")}: ${err.stderr?.trim() || err.message}`);
  }
}

/** Runs a command inside namespace `ns` (`ip netns exec`). */
export function inNs(ns: string, cmd: string, args: readonly string[]): Promise<string> {
  return sh("ip", ["netns", "exec", ns, cmd, ...args]);
}

export interface NetNode {
  readonly ns: string;
  /** The node's end of its veth pair (inside `ns`) and the bridge's end (on the host). */
  readonly dev: string;
  readonly hostDev: string;
  readonly ip: string;
}

export interface Net {
  readonly tag: string;
  readonly bridge: string;
  readonly hostIp: string;
  readonly nodes: NetNode[];
}

/** Whether this machine can make the world: root, `ip`, `nft`, `tc`, `conntrack`. */
export async function netPrerequisites(): Promise<string[]> {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push("root (network namespaces)");
  for (const tool of ["ip", "nft", "tc", "conntrack", "fallocate"]) {
    try {
      await sh("sh", ["-c", `command -v ${tool}`]);
    } catch {
      missing.push(tool);
    }
  }
  if (!(await sh("sh", ["-c", "ls /usr/lib/*/faketime/libfaketime.so.1"]).catch(() => "")))
    missing.push("libfaketime (Debian faketime)");
  return missing;
}

/**
 * A bridge and `count` namespaces on subnet 10.`octet`.0.0/24 (the host's end .1, node i at .10+i). `octet` keeps
 * worlds that run side by side apart.
 */
export async function makeNet(tag: string, octet: number, count: number): Promise<Net> {
  const bridge = `bw${tag}br`;
  const net: Net = { tag, bridge, hostIp: `10.${octet}.0.1`, nodes: [] };
  await sh("ip", ["link", "add", bridge, "type", "bridge"]);
  await sh("ip", ["addr", "add", `${net.hostIp}/24`, "dev", bridge]);
  await sh("ip", ["link", "set", bridge, "up"]);
  // The namespaces side by side (each one's steps in order): a world's set-up is a few dozen `ip` processes.
  net.nodes.push(
    ...(await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const ns = `bw${tag}n${i}`;
        const hostDev = `bw${tag}h${i}`;
        const dev = `bw${tag}v${i}`;
        const ip = `10.${octet}.0.${10 + i}`;
        await sh("ip", ["netns", "add", ns]);
        await sh("ip", ["link", "add", hostDev, "type", "veth", "peer", "name", dev]);
        await sh("ip", ["link", "set", hostDev, "master", bridge, "up"]);
        await sh("ip", ["link", "set", dev, "netns", ns]);
        await inNs(ns, "sh", ["-c", `ip link set lo up && ip addr add ${ip}/24 dev ${dev} && ip link set ${dev} up`]);
        return { ns, dev, hostDev, ip };
      }),
    )),
  );
  return net;
}

/** The network namespace inode of a named namespace (what /proc/PID/ns/net of its processes links to). */
export function nsInode(ns: string): Promise<string> {
  return sh("stat", ["-L", "-c", "%i", `/run/netns/${ns}`]).then((s) => s.trim());
}

/** Removes the namespaces, links and bridge of a net; each step best-effort (a half-made net is torn down too). */
export async function removeNet(tag: string): Promise<void> {
  const left = await leftovers(tag);
  // All at once: a veth whose namespace goes meanwhile is gone already (its deletion then fails, ignored).
  await Promise.all([
    ...left.namespaces.map((ns) => sh("ip", ["netns", "del", ns]).catch(() => undefined)),
    ...left.links.map((link) => sh("ip", ["link", "del", link]).catch(() => undefined)),
    ...left.mounts.map((m) => sh("umount", ["-l", m]).catch(() => undefined)),
  ]);
}

/** What of a tag is on the machine now, judged from outside: namespaces, links, mounts. */
export async function leftovers(tag: string): Promise<{ namespaces: string[]; links: string[]; mounts: string[] }> {
  const prefix = `bw${tag}`;
  const namespaces = (await sh("ip", ["netns", "list"]).catch(() => ""))
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter((n) => n.startsWith(prefix));
  const links = (await sh("ip", ["-o", "link", "show"]).catch(() => ""))
    .split("\n")
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? "")
    .filter((n) => n.startsWith(prefix));
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m.includes(`/berth-net-${tag}`));
  return { namespaces, links, mounts };
}

/** A small tmpfs at `dir` (a node's data directory): ENOSPC is a fault the campaign can strike. */
export async function mountTmpfs(dir: string, sizeMb: number): Promise<void> {
  await sh("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m,mode=0700`, "tmpfs", dir]);
}

// ---------------------------------------------------------------- faults inside a node's namespace

const TABLE = "berthfault";

/**
 * nftables rules in the node's namespace: `both` drops every packet in and out, `in`/`out` one way, `port` only TCP to
 * and from the node's listening port, `reset` answers every TCP packet from outside with a RST. Replaced by `clear`.
 */
export async function nftFault(
  node: NetNode,
  kind: "both" | "in" | "out" | "port" | "reset",
  port: number,
): Promise<void> {
  const rules: string[] = [];
  const peer = `iifname "${node.dev}"`;
  const out = `oifname "${node.dev}"`;
  if (kind === "both" || kind === "in") rules.push(`add rule inet ${TABLE} input ${peer} drop`);
  if (kind === "both" || kind === "out") rules.push(`add rule inet ${TABLE} output ${out} drop`);
  if (kind === "port")
    rules.push(
      `add rule inet ${TABLE} input ${peer} tcp dport ${port} drop`,
      `add rule inet ${TABLE} output ${out} tcp sport ${port} drop`,
    );
  if (kind === "reset") rules.push(`add rule inet ${TABLE} input ${peer} tcp dport ${port} reject with tcp reset`);
  const script = [
    `add table inet ${TABLE}`,
    `add chain inet ${TABLE} input { type filter hook input priority -10 ; }`,
    `add chain inet ${TABLE} output { type filter hook output priority -10 ; }`,
    ...rules,
  ].join("\n");
  const file = join(tmpdir(), `berth-nft-${node.ns}.nft`);
  writeFileSync(file, `${script}\n`);
  try {
    await inNs(node.ns, "nft", ["-f", file]);
  } finally {
    rmSync(file, { force: true });
  }
}

export async function nftClear(node: NetNode): Promise<void> {
  await inNs(node.ns, "nft", ["delete", "table", "inet", TABLE]).catch(() => undefined);
}

export interface Netem {
  readonly delayMs?: number;
  readonly jitterMs?: number;
  readonly lossPct?: number;
  readonly reorderPct?: number;
  readonly duplicatePct?: number;
  readonly rateKbit?: number;
}

/** `tc qdisc … netem` on the node's link (its egress: every answer and every byte it sends). */
export async function netem(node: NetNode, e: Netem): Promise<void> {
  const args = ["qdisc", "replace", "dev", node.dev, "root", "netem"];
  if (e.delayMs !== undefined)
    args.push("delay", `${e.delayMs}ms`, ...(e.jitterMs !== undefined ? [`${e.jitterMs}ms`] : []));
  if (e.lossPct !== undefined) args.push("loss", `${e.lossPct}%`);
  // netem reorders only delayed packets: reorder needs a delay.
  if (e.reorderPct !== undefined)
    args.push(...(e.delayMs === undefined ? ["delay", "20ms"] : []), "reorder", `${e.reorderPct}%`, "50%");
  if (e.duplicatePct !== undefined) args.push("duplicate", `${e.duplicatePct}%`);
  if (e.rateKbit !== undefined) args.push("rate", `${e.rateKbit}kbit`);
  await inNs(node.ns, "tc", args);
}

export async function netemClear(node: NetNode): Promise<void> {
  await inNs(node.ns, "tc", ["qdisc", "del", "dev", node.dev, "root"]).catch(() => undefined);
}

/** Flushes the namespace's connection tracking table, and kills its TCP sockets to peers (`ss -K`: RSTs both ways). */
export async function conntrackFlush(node: NetNode, rst: boolean): Promise<void> {
  await inNs(node.ns, "conntrack", ["-F"]).catch(() => undefined);
  if (rst) await inNs(node.ns, "ss", ["-K", "-t", "dst", "!=", "127.0.0.0/8"]).catch(() => undefined);
}

/**
 * Heal of one node's network, in one process inside its namespace: the fault table deleted, the netem qdisc removed,
 * the link up (each step whether or not the one before found anything to undo).
 */
export async function healNet(node: NetNode): Promise<void> {
  await inNs(node.ns, "sh", [
    "-c",
    `nft delete table inet ${TABLE} 2>/dev/null; tc qdisc del dev ${node.dev} root 2>/dev/null; ip link set ${node.dev} up`,
  ]).catch(() => undefined);
}

export async function linkSet(node: NetNode, up: boolean): Promise<void> {
  await inNs(node.ns, "ip", ["link", "set", node.dev, up ? "up" : "down"]);
}
