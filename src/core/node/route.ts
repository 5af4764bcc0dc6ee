/**
 * The node's route choice for a package variant (spec/mesh.md §9.2): `native` when the variant's arch and os match the
 * node's (or say `any`), otherwise none. A node has no emulator, so it never answers `emulated`; a controller's
 * emulated candidate is refused here as "no route" (the controller's own route table decides what it may try).
 */
import type { Variant } from "../packages/manifest.js";

export type NodeRoute = "native";

export interface NodePlatform {
  /** The manifest's arch spelling (`archOfNode(process.arch)`); `null` on an arch no manifest names. */
  readonly arch: string | null;
  readonly os: "linux" | "darwin";
}

export function routeFor(variant: Pick<Variant, "arch" | "os">, platform: NodePlatform): NodeRoute | null {
  const archOk = variant.arch === "any" || variant.arch === platform.arch;
  const osOk = variant.os === "any" || variant.os === platform.os;
  return archOk && osOk ? "native" : null;
}
