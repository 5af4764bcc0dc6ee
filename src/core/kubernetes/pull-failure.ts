/**
 * Pull failures that will not heal on their own (spec/kubernetes.md §10.1–§10.2). Reporting only: a `PullFailure` changes
 * what berth says and how long it waits, never whether anything is deleted (I-2) — a reason string is a hint from
 * the kubelet, not deletion authority.
 */
export type PullFailure = "unauthorized" | "manifest-unknown" | "arch-mismatch";

export const PULL_FAILURES: readonly PullFailure[] = ["unauthorized", "manifest-unknown", "arch-mismatch"];

const CLASSES: ReadonlyArray<readonly [PullFailure, readonly string[]]> = [
  ["unauthorized", ["401", "unauthorized", "403", "denied", "authentication required"]],
  ["manifest-unknown", ["manifest unknown", "not found", "manifest_unknown", "repository does not exist"]],
  ["arch-mismatch", ["no match for platform", "no matching manifest"]],
];

/**
 * First class whose substring occurs in the lower-cased kubelet message; null means "may still heal" (for example
 * `dial tcp: i/o timeout`). Order matters: "pull access denied, repository does not exist" is `unauthorized`.
 */
export function classifyPullFailure(kubeletMessage: string | null | undefined): PullFailure | null {
  const text = (kubeletMessage ?? "").toLowerCase();
  for (const [failure, needles] of CLASSES) if (needles.some((n) => text.includes(n))) return failure;
  return null;
}

/** `{registry}` is the normalized image up to its first `/`. */
export function registryOf(image: string): string {
  const slash = image.indexOf("/");
  return slash === -1 ? image : image.slice(0, slash);
}

/** The text inside K2. It names the image, never the registry's own error text (which can carry tokens). */
export function pullFailureMessage(failure: PullFailure, image: string): string {
  const registry = registryOf(image);
  switch (failure) {
    case "unauthorized":
      return `the cluster is not authorized to pull ${image} from ${registry}. This pull retries indefinitely and will not succeed on its own: grant the cluster's nodes access to that registry.`;
    case "manifest-unknown":
      return `${registry} has no image at ${image}. Check the digest and repository.`;
    case "arch-mismatch":
      return `${image} has no variant for the architecture of the nodes it was scheduled on.`;
  }
}
