#!/usr/bin/env node
/** `buzz-backend-berth`: Buzz Desktop's name for `berth provider kubernetes` (spec/kubernetes.md §3.1). */
import { runProviderProcess } from "../../kubernetes/provider-process.js";
import { berthVersion } from "../../version.js";

/** Set by scripts/bundle-provider at bundle time: a copied bundle has no package.json beside it. */
declare const BERTH_BUNDLE_VERSION: string | undefined;

void runProviderProcess(
  process.argv.slice(2),
  typeof BERTH_BUNDLE_VERSION === "string" ? BERTH_BUNDLE_VERSION : berthVersion(),
);
