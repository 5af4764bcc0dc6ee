/**
 * Minting the user delete authorities. Only the operator-verb layer (`src/kubernetes/verbs.ts`) imports this file:
 * an explicit, audited `stop` is the one path in berth that may delete a started pod.
 */
import type { UserReplace, UserStop } from "./authority.js";

export function userStop(actionId: string): UserStop {
  return { kind: "user-stop", actionId } as UserStop;
}

export function userReplace(actionId: string): UserReplace {
  return { kind: "user-replace", actionId } as UserReplace;
}
