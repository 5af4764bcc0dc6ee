/**
 * What an apiserver answer means (spec/kubernetes.md §8.6). Only a body that parses as a `Status` with a non-empty
 * `reason` is a verdict, whatever the HTTP code; a connection reset, a timeout, an empty reason or a proxy's HTML page
 * is an error and never `NotFound` — confirmed absence authorises destructive actions.
 */
import { z } from "zod";

export type ApiError =
  | { readonly kind: "status"; readonly code: number; readonly reason: string; readonly message: string }
  | { readonly kind: "transport"; readonly message: string };

const StatusSchema = z.looseObject({
  kind: z.literal("Status"),
  reason: z.string().optional(),
  message: z.string().optional(),
  code: z.number().optional(),
});

export interface ParsedStatus {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
}

/** A `Status` body with a non-empty reason, or null. */
export function parseStatus(body: string, httpCode: number): ParsedStatus | null {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return null;
  }
  const parsed = StatusSchema.safeParse(json);
  if (!parsed.success || !parsed.data.reason) return null;
  return { code: parsed.data.code ?? httpCode, reason: parsed.data.reason, message: parsed.data.message ?? "" };
}

/** Any non-2xx answer as an ApiError: a verdict when it is a Status, otherwise a transport-class error. */
export function apiErrorOf(httpCode: number, body: string): ApiError {
  const status = parseStatus(body, httpCode);
  if (status) return { kind: "status", ...status };
  return { kind: "transport", message: `HTTP ${httpCode} without a Kubernetes Status body` };
}

/** `{e}` in the catalogue: `<reason>: <message>` for a Status; never a request body. */
export function describeApiError(error: ApiError): string {
  if (error.kind === "transport") return error.message;
  return error.message ? `${error.reason}: ${error.message}` : error.reason;
}

/** §8.7 step 4: definite rejections after which our own Secret may be cleaned up at once. */
export function isDefiniteRejection(error: ApiError): boolean {
  return error.kind === "status" && [400, 401, 403, 404, 422].includes(error.code);
}

export type DeleteVerdict = "accepted" | "not-found" | "precondition-failed" | "error";

/** Maps one DELETE answer; `httpCode` null means the request never got an answer. */
export function deleteVerdict(httpCode: number | null, body: string): DeleteVerdict {
  if (httpCode === null) return "error";
  if (httpCode >= 200 && httpCode < 300) return "accepted";
  const status = parseStatus(body, httpCode);
  if (!status) return "error";
  if (status.reason === "NotFound") return "not-found";
  if (status.reason === "Conflict") return "precondition-failed";
  return "error";
}

/** §11 step 1: the `Date` header parsed strictly as IMF-fixdate; anything else means "no server clock". */
const IMF =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

export function parseImfFixdate(header: string | null | undefined): number | null {
  if (!header) return null;
  const m = IMF.exec(header);
  if (!m) return null;
  const [, day, dd, mon, yyyy, hh, mi, ss] = m;
  const ms = Date.UTC(Number(yyyy), MONTHS.indexOf(mon as string), Number(dd), Number(hh), Number(mi), Number(ss));
  const d = new Date(ms);
  // Reject impossible dates (31 Feb) and a weekday that does not match.
  if (d.getUTCDate() !== Number(dd) || Number(hh) > 23 || Number(mi) > 59 || Number(ss) > 60) return null;
  if (DAYS[d.getUTCDay()] !== day) return null;
  return ms;
}
