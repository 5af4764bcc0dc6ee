/**
 * Pull-failure messages as the kubelet publishes them (containerd 1.6's CRI, the kubelet's back-off wrapper, dockerd,
 * CRI-O), built around one image reference: the fast tier's classifier tests and the simulated kubelet use the same
 * texts, so neither can drift from the other (issue 34).
 */
export const PULL_TEXTS = {
  manifestUnknown: (ref: string) =>
    `rpc error: code = NotFound desc = failed to pull and unpack image ${JSON.stringify(ref)}: failed to resolve reference ${JSON.stringify(ref)}: ${ref}: not found`,
  unauthorizedStatus: (ref: string, url: string) =>
    `rpc error: code = Unknown desc = failed to pull and unpack image ${JSON.stringify(ref)}: failed to resolve reference ${JSON.stringify(ref)}: unexpected status from HEAD request to ${url}: 401 Unauthorized`,
  forbiddenToken: (ref: string, tokenUrl: string) =>
    `rpc error: code = Unknown desc = failed to pull and unpack image ${JSON.stringify(ref)}: failed to resolve reference ${JSON.stringify(ref)}: failed to authorize: failed to fetch anonymous token: unexpected status from GET request to ${tokenUrl}: 403 Forbidden`,
  pullAccessDenied: (ref: string) =>
    `failed to pull and unpack image ${JSON.stringify(ref)}: failed to resolve reference ${JSON.stringify(ref)}: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`,
  archContainerd: (ref: string) =>
    `rpc error: code = NotFound desc = failed to pull and unpack image ${JSON.stringify(ref)}: no match for platform in manifest: not found`,
  archDockerd: (ref: string) =>
    `Error response from daemon: no matching manifest for linux/amd64 in the manifest list entries: ${ref}`,
  refused: (ref: string, url: string) =>
    `rpc error: code = Unknown desc = failed to pull and unpack image ${JSON.stringify(ref)}: failed to resolve reference ${JSON.stringify(ref)}: failed to do request: Head ${JSON.stringify(url)}: dial tcp 127.0.0.1:1: connect: connection refused`,
  commitDigest: (ref: string, digest: string, other: string) =>
    `rpc error: code = FailedPrecondition desc = failed to pull and unpack image ${JSON.stringify(ref)}: failed commit on ref "manifest-${digest.replace(":", "-")}": unexpected commit digest ${other}, expected ${digest}: failed precondition`,
  crioUnknown: (digest: string, name: string) =>
    `rpc error: code = Unknown desc = reading manifest ${digest} in ${name}: manifest unknown`,
  crioUnauthorized: (digest: string, name: string) =>
    `rpc error: code = Unknown desc = reading manifest ${digest} in ${name}: unauthorized: authentication required`,
} as const;

/** The kubelet's `ImagePullBackOff` waiting message: the back-off line, then the last pull error (Kubernetes ≥ 1.30). */
export const backOffText = (ref: string, message: string) =>
  `Back-off pulling image ${JSON.stringify(ref)}: ErrImagePull: ${message}`;
