/**
 * PATH for kubeconfig `exec` credential plugins (spec/kubernetes.md §8.1 step 1). GUI-launched callers hand over a
 * minimal PATH, so the usual install locations go first; an empty entry would mean the working directory, which a
 * provider must never depend on.
 */
export function providerPath(inherited: string | undefined, home: string | undefined, delimiter = ":"): string {
  const entries = ["/opt/homebrew/bin", "/usr/local/bin"];
  if (home) entries.push(`${home}/.local/bin`);
  for (const e of (inherited ?? "").split(delimiter)) if (e !== "") entries.push(e);
  return entries.join(delimiter);
}
