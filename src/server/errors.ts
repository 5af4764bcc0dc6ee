/** API errors as values the route shell turns into `{error:{code, message, …}}` with the right status. */
import type { z } from "zod";

export interface FieldIssue {
  readonly path: string;
  readonly message: string;
}

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 413 | 415 | 422 | 500 | 502 | 503,
    readonly code: string,
    message: string,
    readonly extra: {
      issues?: readonly FieldIssue[];
      constraints?: ReadonlyArray<{ constraint: string; detail: string }>;
      /** An agent verb's failure as src/agents gave it, for the CLI to word as it does locally (issue 36). */
      failure?: { readonly kind: string; readonly message: string };
    } = {},
  ) {
    super(message);
  }

  body(): { error: Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...this.extra } };
  }
}

/** `body.spec.package`, `query.limit`, `params.id`: the field as the caller wrote it. */
export function fieldPath(where: string, path: ReadonlyArray<PropertyKey>): string {
  return [where, ...path.map(String)].join(".");
}

/** One 400 whose message names every field and says what to do. */
export function invalidRequest(where: "params" | "query" | "body", issues: ReadonlyArray<z.core.$ZodIssue>): ApiError {
  const list = issues.map((i) => {
    const path = fieldPath(where, i.path);
    const unknownKeys = i.code === "unrecognized_keys" ? ((i as { keys?: string[] }).keys ?? []) : [];
    const message =
      unknownKeys.length > 0
        ? `unknown field${unknownKeys.length > 1 ? "s" : ""} ${unknownKeys.join(", ")}; remove ${unknownKeys.length > 1 ? "them" : "it"}`
        : i.message;
    return { path: unknownKeys.length === 1 ? `${path === where ? where : path}.${unknownKeys[0]}` : path, message };
  });
  return new ApiError(400, "invalid_request", list.map((i) => `${i.path}: ${i.message}`).join("; "), { issues: list });
}

export const notFound = (what: string, hint: string) =>
  new ApiError(404, "not_found", `${what} does not exist; ${hint}`);
