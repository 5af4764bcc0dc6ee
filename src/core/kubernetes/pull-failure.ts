/**
 * Pull failures that will not heal on their own (spec/kubernetes.md §10.1–§10.2). Reporting only: a `PullFailure` changes
 * what berth says and how long it waits, never whether anything is deleted (I-2) — a reason string is a hint from
 * the kubelet, not deletion authority.
 *
 * Classified from structure, never from substrings of free text (issue 34): the kubelet's message embeds the image
 * reference, its digest and the registry URL, so a digest holding `401`/`403` or a repository named `denied` or
 * `not-found` would otherwise decide the class. The message is read as the error chain it is:
 *
 *   [Back-off pulling image "<ref>": ErrImagePull: ] [rpc error: code = <Code> desc = ] link: link: … : link
 *
 * Go-quoted strings (`%q`: references, URLs) are removed first, the gRPC code is taken out as a field, and what is
 * left is split at `": "` — a separator no image reference, digest or URL can contain. Only a whole link equal to
 * one of the runtime's or registry's own fixed phrases (or starting with the one phrase that carries a platform)
 * counts; the first such link from the left wins, as the outer cause is stated first ("pull access denied,
 * repository does not exist or may require authorization: server message: insufficient_scope" is `unauthorized`).
 * Without one, a gRPC code the runtime reserves for the case decides; otherwise the failure may still heal.
 */
import { AGENT_CONTAINER } from "./naming.js";
import type { PodObject } from "./objects.js";

export type PullFailure = "unauthorized" | "manifest-unknown" | "arch-mismatch";

export const PULL_FAILURES: readonly PullFailure[] = ["unauthorized", "manifest-unknown", "arch-mismatch"];

/** Whole links, lower-cased: containerd's resolver and errdefs, the registry API's error codes, dockerd and CRI-O. */
const LINKS: ReadonlyMap<string, PullFailure> = new Map([
  // containerd's docker resolver: "unexpected status from HEAD request to <url>: 401 Unauthorized".
  ["401 unauthorized", "unauthorized"],
  ["403 forbidden", "unauthorized"],
  ["pull access denied, repository does not exist or may require authorization", "unauthorized"],
  ["insufficient_scope", "unauthorized"],
  ["authorization failed", "unauthorized"],
  ["failed to authorize", "unauthorized"],
  // Registry error codes as rendered by containerd and CRI-O ("unauthorized: authentication required").
  ["unauthorized", "unauthorized"],
  ["authentication required", "unauthorized"],
  ["denied", "unauthorized"],
  ["requested access to the resource is denied", "unauthorized"],
  // containerd's errdefs.ErrNotFound ("<ref>: not found"), the registry's MANIFEST_UNKNOWN and NAME_UNKNOWN.
  ["not found", "manifest-unknown"],
  ["404 not found", "manifest-unknown"],
  ["manifest unknown", "manifest-unknown"],
  ["manifest_unknown", "manifest-unknown"],
  ["name unknown", "manifest-unknown"],
  ["repository name not known to registry", "manifest-unknown"],
  // containerd: "no match for platform in manifest: not found" — the platform link comes first, so it wins.
  ["no match for platform in manifest", "arch-mismatch"],
]);

/**
 * Links that start with a fixed phrase and go on with a variable tail: dockerd's "no matching manifest for linux/amd64
 * in the manifest list entries" and "pull access denied for <repo>, repository does not exist or may require 'docker
 * login'". The phrase opens the link, so no reference inside the tail can supply it.
 */
const LINK_PREFIXES: ReadonlyArray<readonly [string, PullFailure]> = [
  ["no matching manifest for ", "arch-mismatch"],
  ["pull access denied", "unauthorized"],
];

/** gRPC codes that name the case on their own (containerd maps errdefs to them); `NotFound` also covers a platform miss. */
const GRPC_CODES: ReadonlyMap<string, PullFailure> = new Map([
  ["NotFound", "manifest-unknown"],
  ["PermissionDenied", "unauthorized"],
  ["Unauthenticated", "unauthorized"],
]);

const GO_QUOTED = /"(?:[^"\\]|\\.)*"/g;
const GRPC_PREFIX = /rpc error: code = ([A-Za-z]+) desc = /g;

/** The message as an error chain: its links (quoted strings blanked) and the innermost gRPC code, if any. */
export function pullErrorChain(kubeletMessage: string): {
  readonly links: readonly string[];
  readonly grpcCode: string | null;
} {
  let grpcCode: string | null = null;
  const unquoted = kubeletMessage.replace(GO_QUOTED, '""').replace(GRPC_PREFIX, (_all, code: string) => {
    grpcCode = code;
    return "";
  });
  const links = unquoted
    .split(": ")
    .map((l) => l.trim().toLowerCase())
    .filter((l) => l !== "");
  return { links, grpcCode };
}

function classOfLink(link: string): PullFailure | null {
  const whole = LINKS.get(link);
  if (whole) return whole;
  for (const [prefix, failure] of LINK_PREFIXES) if (link.startsWith(prefix)) return failure;
  return null;
}

/**
 * The class of a pull failure from the kubelet's waiting message (reasons `ErrImagePull`/`ImagePullBackOff` only; the
 * caller checks the reason field). Null means "may still heal" (`dial tcp …: i/o timeout`, `connection refused`,
 * `unexpected commit digest …: failed precondition`).
 */
export function classifyPullFailure(kubeletMessage: string | null | undefined): PullFailure | null {
  const { links, grpcCode } = pullErrorChain(kubeletMessage ?? "");
  for (const link of links) {
    const failure = classOfLink(link);
    if (failure) return failure;
  }
  return grpcCode === null ? null : (GRPC_CODES.get(grpcCode) ?? null);
}

/**
 * The image the failing pod pulls (issue 34): its `agent` container's image, not the configured one — a never-started
 * pod from an earlier configuration is reported (row 6 precedes divergence), so naming today's image would send the
 * user to fix the wrong reference. `fallback` only for a pod without that container.
 */
export function failingImage(pod: PodObject, fallback: string): string {
  const image = pod.spec.containers.find((c) => c.name === AGENT_CONTAINER)?.image;
  return image ? image : fallback;
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
