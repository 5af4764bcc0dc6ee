/** A PostgreSQL address without its password, for messages, `location` and anything printed or chained (issue 20). */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    // A password may also ride in the query (?password=…): dropped the same way.
    if (u.searchParams.has("password")) u.searchParams.set("password", "***");
    return u.toString();
  } catch {
    return "postgres://(unparseable address)";
  }
}
