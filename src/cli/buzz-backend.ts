#!/usr/bin/env node
/** `buzz-backend-berth`: Buzz Desktop's name for `berth provider kubernetes` (spec/kubernetes.md §3.1). */
import { runProviderProcess } from "../kubernetes/provider-process.js";
import { berthVersion } from "../version.js";

void runProviderProcess(process.argv.slice(2), berthVersion());
