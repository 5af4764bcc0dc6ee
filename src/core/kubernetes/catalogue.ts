/**
 * The user-facing answer texts of spec/kubernetes.md §3.6 that the shell produces (A–D live beside the parsers that
 * refuse). Buzz Desktop shows these verbatim as the agent's last error, so they are reproduced byte for byte,
 * em dashes included. `{e}` is always `describeApiError(...)`: reason and message, never a body.
 */
export const catalogue = {
  A1: () => "unsupported provider arguments",
  A2: (detail: string) => `request is not valid JSON: ${detail}`,
  C1: () => "private_key_nsec is not a decodable nsec1 key",
  E1: (e: string) => `could not open the audit chain: ${e}`,
  E2: (e: string) => `could not write the audit record: ${e}`,
  F1: (ctx: string, e: string) => `could not load kubeconfig for context ${ctx}: ${e}`,
  F2: (ctx: string, cmd: string) =>
    `kubeconfig context ${ctx} authenticates with the credential plugin ${JSON.stringify(cmd)}, which is not on PATH. Install it or add its directory to PATH, then try again.`,
  F3: (ctx: string, e: string) => `could not connect to the cluster using kubeconfig context ${ctx}: ${e}`,
  G1: (ns: string, e: string) => `could not check whether namespace ${ns} exists: ${e}`,
  G2: (ns: string) =>
    `not authorized to create namespace ${ns}. Ask a cluster administrator to run \`kubectl create namespace ${ns}\`, then try again.`,
  G3: (ns: string, e: string) => `could not create namespace ${ns}: ${e}`,
  H1: (n: string, e: string) => `could not check whether secret ${n} exists: ${e}`,
  H2: (n: string, e: string) => `could not create secret ${n}: ${e}`,
  H3: (n: string, e: string) => `could not create pod ${n}: ${e}`,
  H4: (n: string, e: string) => `could not delete pod ${n}: ${e}`,
  H5: (n: string, e: string) => `could not read pod ${n}: ${e}`,
  J2: (n: string, e: string) => `could not check persistent workspace claim ${n}: ${e}`,
  J3: (n: string, e: string) => `could not create persistent workspace claim ${n}: ${e}`,
  J4: (n: string, e: string) => `workspace claim ${n} won a create race but could not be read: ${e}`,
  claim: (n: string, problem: string) => `persistent workspace claim ${n} ${problem}`,
  K1: (d: number, pod: string, condition: string) => `startup not confirmed within ${d}s for ${pod}: ${condition}`,
  K2: (pod: string, pullMessage: string) => `${pod} did not start: ${pullMessage}`,
  K3: (d: number, pod: string) => `timed out after ${d}s waiting for ${pod} to finish terminating`,
  K4: (pod: string, condition: string) =>
    `${pod} was created by this deploy and did not stay running: ${condition}. Not retrying in this call — an immediate exit recurs until its cause is fixed. Check the agent's configuration and press Start to try again.`,
  K5: (pod: string) =>
    `a pod named ${pod} already exists in this namespace but is not managed by this provider for this agent (it lacks the management marker or carries a different agent identity). Remove it, or deploy this agent to a different namespace.`,
  K6: (d: number, pod: string, condition: string) =>
    `startup not confirmed within ${d}s for ${pod} (another deploy of this agent created it): ${condition}`,
  K7: (pod: string) => `${pod} was created by another deploy of this agent and is already being deleted; try again`,
  K8: (pod: string, condition: string) =>
    `${pod} was created by another deploy of this agent and did not start: ${condition}`,
} as const;
