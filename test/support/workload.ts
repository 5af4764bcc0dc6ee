/** A workload record that asks for nothing (no memory, labels, signers or files): the controller store's tests' default. */
import type { WorkloadRecord } from "../../src/mesh/controller/store.js";

export const PLAIN_WORKLOAD: WorkloadRecord = {
  kind: "agent",
  network: "lan",
  secrets: false,
  cpu_millis: 0,
  memory_bytes: 0,
  labels: [],
  excludes: [],
  package_id: "c".repeat(64),
  signer_keys: [],
  file_hashes: [],
};
