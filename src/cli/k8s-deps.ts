/** What the k8s verbs (k8s.ts) use, gathered so that they load it in one import when one of them runs (issue 19). */
export { parse as parseYaml } from "yaml";
export { z } from "zod";
export { runConvergeLoop } from "../agents/index.js";
export { isValidNamespace } from "../core/kubernetes/config.js";
export { identityFromPubkeyHex } from "../core/kubernetes/naming.js";
export { realClock } from "../kit/clock.js";
export { boundedStderrLogger } from "../kit/log.js";
export { openCliK8sAudit } from "./k8s-audit.js";
export { prepareDeploy } from "../kubernetes/prepare.js";
export { settingsFromEnv } from "../kubernetes/settings.js";
export { clearForReplace, list, replaceAuditEnd, replaceAuditStart, status, stop } from "../kubernetes/verbs.js";
