/**
 * The parse of a text, kept while the text stays byte-identical (issue 19: the node re-reads its policy files and
 * re-fetches a package's manifest at every use, and parsing them was most of that cost). Only the parse is kept, since
 * it depends on the text alone; whatever else a use checks (ids, signatures, revocations) runs every time. One slot per
 * key, the latest text. The value is shared by every reader, so it is frozen all the way down: a reader that tried to
 * change it throws rather than changing what the next reader sees.
 */
export class ParseMemo<T> {
  private readonly last = new Map<string, { readonly text: string; readonly value: T }>();

  get(key: string, text: string, parse: (text: string) => T): T {
    const kept = this.last.get(key);
    if (kept?.text === text) return kept.value;
    const value = deepFreeze(parse(text));
    this.last.set(key, { text, value });
    return value;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
