/**
 * API requests per deploy path (issue 3): each path driven through the real converge loop against the in-process
 * fake apiserver, printed next to the fewest requests the spec's steps allow for that path. Every `Cluster` call
 * is exactly one HTTP request in `HttpCluster` (the watch counts as one), so the fake's call count is the HTTP count.
 * Target: the no-op path in ≤ 2 requests.
 */
import { bindingOf, podManifest } from "../../src/core/kubernetes/manifests.js";
import { labelsFor, PUBKEY_FULL_ANNOTATION } from "../../src/core/kubernetes/naming.js";
import type { PodObject } from "../../src/core/kubernetes/objects.js";
import { WHO } from "../../test/support/kubernetes/pods.js";
import { desiredFingerprint, type Harness, harness, NS } from "../../test/support/kubernetes/harness.js";

const POD = WHO.podName;

function seed(h: Harness, intent: string, state?: Record<string, unknown>, phase?: string): void {
  h.fake.seedPod(NS, podManifest(WHO, h.config, "aaaaaaaa", intent) as PodObject);
  h.fake.seedSecret(NS, {
    metadata: { name: `${POD}-aaaaaaaa`, labels: podLabels(h), annotations: { [PUBKEY_FULL_ANNOTATION]: WHO.pubkey } },
  });
  if (state) {
    h.fake.bind(NS, POD);
    h.fake.setAgentState(NS, POD, state, phase);
  }
}

const podLabels = (h: Harness) => labelsFor(WHO, bindingOf(h.config));

interface Path {
  readonly name: string;
  /** The fewest requests the spec's steps allow, and which. */
  readonly minimum: number;
  readonly steps: string;
  readonly arrange: (h: Harness) => void;
}

const paths: Path[] = [
  {
    name: "no-op on a started pod",
    minimum: 1,
    steps: "GET",
    arrange: (h) => seed(h, desiredFingerprint(h.inputs), { running: {} }, "Running"),
  },
  {
    name: "fresh create",
    // GET ns is counted here because the fake is not a pooled HttpCluster; a pooled connection trusts a namespace it
    // saw within 60 s (spec/kubernetes.md §20 P-23, real-apiserver.ts). Since issue 19 the fast path's 404 is the
    // loop's first observation when GC plans nothing (§8.3 step 5.2), and the watch opens before the Secret create.
    minimum: 7,
    steps: "GET, GET ns, LIST pods, LIST secrets, POST secret, POST pod, GET (started)",
    arrange: () => {},
  },
  {
    name: "terminated replace (collected by GC)",
    minimum: 11,
    steps: "GET, GET ns, 2 LISTs, GET + DELETE pod + DELETE secret (GC), GET, POST secret, POST pod, GET",
    arrange: (h) => seed(h, desiredFingerprint(h.inputs), { terminated: { exitCode: 0 } }, "Succeeded"),
  },
  {
    name: "divergent replace (never started)",
    minimum: 10,
    steps: "GET, GET ns, 2 LISTs, GET, DELETE, GET (gone), POST secret, POST pod, GET",
    arrange: (h) => seed(h, "0".repeat(64)),
  },
];

console.log("API requests per deploy path (fake apiserver, counted per request; watch included)");
console.log(
  `  ${"path".padEnd(40)} ${"requests".padStart(8)} ${"minimum".padStart(8)} ${"ratio".padStart(7)}  sequence`,
);
for (const p of paths) {
  const h = harness();
  p.arrange(h);
  h.kubeletStartsAfter(500);
  const before = h.fake.calls.length;
  const report = await h.deploy();
  const calls = h.fake.calls.slice(before);
  const n = calls.length;
  const verdict = p.name.startsWith("no-op") ? (n <= 2 ? "  (target ≤ 2: met)" : "  (target ≤ 2: NOT met)") : "";
  console.log(
    `  ${p.name.padEnd(40)} ${String(n).padStart(8)} ${String(p.minimum).padStart(8)} ${(n / p.minimum).toFixed(2).padStart(7)}  ${report.answer.ok ? "ok" : "FAILED"}${verdict}`,
  );
  console.log(`  ${"".padEnd(40)} ${calls.map((c) => c.op).join(" → ")}`);
  console.log(`  ${"".padEnd(40)} minimum: ${p.steps}`);
}
