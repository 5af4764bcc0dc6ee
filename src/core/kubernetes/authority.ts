/**
 * Who may authorise a pod delete (spec/kubernetes.md §7.3). The Cluster's delete executor takes one of these besides the
 * fence, so a delete always names the row or verb behind it — and the converge loop, which only ever holds
 * classified and GC authorities, has no way to mint the user ones (I-5: no automated path deletes a started pod).
 */
import type { DeleteAction } from "./classify.js";

declare const userBrand: unique symbol;

export type ClassifiedDelete = { readonly kind: "classified"; readonly action: DeleteAction };
export type GcDelete = { readonly kind: "gc-terminated" };
export type UserStop = { readonly kind: "user-stop"; readonly actionId: string; readonly [userBrand]: true };
export type UserReplace = { readonly kind: "user-replace"; readonly actionId: string; readonly [userBrand]: true };
export type DeleteAuthority = ClassifiedDelete | GcDelete | UserStop | UserReplace;

export function classifiedDelete(action: DeleteAction): ClassifiedDelete {
  return { kind: "classified", action };
}

export const GC_DELETE: GcDelete = { kind: "gc-terminated" };
