/**
 * The Kubernetes client is most of berth's start-up time (over a second of CPU): only the verbs that talk to a
 * cluster load it, when they first connect, so `berth agents`, `berth nodes list` or `berth --help` start fast.
 */
import type { connect as connectNow } from "../kubernetes/connect.js";

export const connect: typeof connectNow = async (...args) =>
  (await import("../kubernetes/connect.js")).connect(...args);
