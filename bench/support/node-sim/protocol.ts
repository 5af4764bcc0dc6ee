/** The messages between the node simulator's processes and the benchmark driving them (client.ts ↔ host.ts). */
import type { SimInstance } from "./node.js";

export interface SimNodeInfo {
  readonly node_id: string;
  /** The node's identity key (what `berth nodes add --key` would pin). */
  readonly key: string;
  readonly addr: string;
  readonly name: string;
}

export type HostRequest =
  | {
      readonly op: "start";
      readonly count: number;
      /** Node names are `${prefix}${first + i}`. */
      readonly prefix: string;
      readonly first: number;
      readonly controllers: readonly string[];
      readonly signers: readonly string[];
      readonly leaseMs: number | null;
      readonly board: string;
      readonly labels: Readonly<Record<string, string>>;
    }
  /** Instances held as if placed (the benchmarks' fill), each on the node it names. */
  | { readonly op: "hold"; readonly rows: ReadonlyArray<SimInstance & { readonly node_id: string }> }
  /**
   * crash: the machine is gone (listener closed, instances gone); hang: gone too, but its address still takes
   * connections and answers nothing (a hung host, a firewall that drops: every call waits for its timeout); cut:
   * unreachable but running (its lease runs).
   */
  | { readonly op: "crash" | "hang" | "cut" | "heal"; readonly node_ids: readonly string[] }
  | { readonly op: "census" }
  | { readonly op: "close" };

export interface Census {
  /** Live copies by agent name on nodes that have not crashed (issue 16's "never two copies" from the nodes' side). */
  readonly live: Record<string, number>;
  readonly instances: number;
  readonly served: Record<string, number>;
  /** TCP connections accepted (each one a TLS handshake). */
  readonly handshakes: number;
  readonly rss_mb: number;
}

export type HostReply =
  | { readonly id: number; readonly ok: true; readonly result: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };
