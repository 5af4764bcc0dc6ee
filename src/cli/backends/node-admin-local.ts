/** `berth node cordon|uncordon|forget|drain` on this machine's files (issue 16): the same calls the API route makes. */
import type { JsonObject } from "../../core/crypto/canonical.js";
import type { MeshController } from "../../mesh/controller/index.js";
import { cordonNode, drainNode, forgetNode, removeNode } from "../../mesh/controller/node-admin.js";
import type { NodeAdminVerb } from "./types.js";
import { operatorIdentity } from "../controller.js";
import { withSpinner } from "../progress.js";
import { nodeAdminError } from "./failures.js";

const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

export async function localNodeAdmin(
  c: MeshController,
  verb: NodeAdminVerb,
  ref: string,
  reason: string,
  json: boolean | undefined,
): Promise<JsonObject> {
  const operator = operatorIdentity(verb === "remove" ? "berth nodes remove" : `berth node ${verb}`);
  const deps = await c.nodeAdmin();
  // A fresh process knows no node's boot id or liveness until it describes them (a server keeps them fresh).
  if (verb === "drain") await c.refreshTargets();
  const r =
    verb === "cordon" || verb === "uncordon"
      ? await cordonNode(deps, ref, verb === "cordon", reason, operator)
      : verb === "forget"
        ? await forgetNode(deps, ref, reason, operator)
        : verb === "remove"
          ? await removeNode(deps, ref, reason, operator)
          : await withSpinner(`draining ${ref}, one agent at a time`, json, () =>
              drainNode(deps, ref, reason, operator, sleep),
            );
  if ("error" in r) throw nodeAdminError(r.error);
  return JSON.parse(JSON.stringify(r)) as JsonObject;
}
