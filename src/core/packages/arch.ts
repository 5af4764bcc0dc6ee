/**
 * The package architectures (spec §5.2) and Node's names for them. Apart from manifest.ts so that what needs only
 * this (the node's facts) does not build the manifest's schemas: an idle node daemon never reads a manifest (issue 19).
 */
export const ARCHES = ["aarch64", "armv7", "x86_64"] as const;
export type Arch = (typeof ARCHES)[number];

/** Node.js `process.arch` → the package's architecture names (§5.2). */
export function archOfNode(nodeArch: string): Arch | null {
  switch (nodeArch) {
    case "arm64":
      return "aarch64";
    case "arm":
      return "armv7";
    case "x64":
      return "x86_64";
    default:
      return null;
  }
}
