/**
 * serde_json's verdict on a request's bytes (issue 18.6): Buzz answers malformed JSON with
 * `request is not valid JSON: {e}`, `e` being serde_json's error (`<what> at line L column C`), and Desktop shows it
 * verbatim. This is a port of the behaviour of serde_json's `from_str::<Value>` (serde-rs/json src/de.rs, read.rs):
 * the same strict grammar, the same first error, the same byte position.
 *
 * Positions are serde_json's: `line` counts `\n` before the index, `column` is the byte offset from the line's start.
 * An error at the *current* index follows a byte that was consumed (so the column is that byte's 1-based column); a
 * *peek* error names the byte not yet consumed (its 1-based column, or the end). What it accepts and JSON.parse does
 * not never happens; what it refuses and JSON.parse accepts: lone UTF-16 surrogate escapes, numbers beyond f64, and
 * nesting deeper than serde_json's 128 levels. It never quotes the input: Desktop shows this text, and the input may
 * hold a key.
 */

const MESSAGES = {
  eofList: "EOF while parsing a list",
  eofObject: "EOF while parsing an object",
  eofString: "EOF while parsing a string",
  eofValue: "EOF while parsing a value",
  colon: "expected `:`",
  listCommaOrEnd: "expected `,` or `]`",
  objectCommaOrEnd: "expected `,` or `}`",
  ident: "expected ident",
  value: "expected value",
  escape: "invalid escape",
  number: "invalid number",
  range: "number out of range",
  control: "control character (\\u0000-\\u001F) found while parsing a string",
  keyString: "key must be a string",
  loneLeading: "lone leading surrogate in hex escape",
  trailingComma: "trailing comma",
  trailing: "trailing characters",
  hexEnd: "unexpected end of hex escape",
  recursion: "recursion limit exceeded",
} as const;

class SyntaxFault extends Error {}

const RECURSION_LIMIT = 128;

class Reader {
  index = 0;
  private depth = RECURSION_LIMIT;
  constructor(private readonly b: Uint8Array) {}

  private at(i: number): string {
    let start = 0;
    let line = 1;
    for (let k = 0; k < i; k++) {
      if (this.b[k] === 0x0a) {
        line++;
        start = k + 1;
      }
    }
    return `at line ${line} column ${i - start}`;
  }
  /** An error at the current index (after a consumed byte). */
  fail(m: string): never {
    throw new SyntaxFault(`${m} ${this.at(this.index)}`);
  }
  /** An error at the byte being peeked (not consumed). */
  peekFail(m: string): never {
    throw new SyntaxFault(`${m} ${this.at(Math.min(this.b.length, this.index + 1))}`);
  }
  peek(): number | undefined {
    return this.b[this.index];
  }
  next(): number | undefined {
    const c = this.b[this.index];
    if (c !== undefined) this.index++;
    return c;
  }
  /** Skips JSON whitespace and peeks. */
  ws(): number | undefined {
    for (;;) {
      const c = this.b[this.index];
      if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) this.index++;
      else return c;
    }
  }

  value(): void {
    const c = this.ws();
    if (c === undefined) this.peekFail(MESSAGES.eofValue);
    if (c === 0x6e) this.ident("ull");
    else if (c === 0x74) this.ident("rue");
    else if (c === 0x66) this.ident("alse");
    else if (c === 0x2d) {
      this.index++;
      this.number();
    } else if (c >= 0x30 && c <= 0x39) this.number();
    else if (c === 0x22) {
      this.index++;
      this.string();
    } else if (c === 0x5b || c === 0x7b) {
      // serde_json's check_recursion: the bracket is peeked, not yet eaten, when the limit trips.
      if (--this.depth === 0) this.peekFail(MESSAGES.recursion);
      this.index++;
      if (c === 0x5b) this.list();
      else this.object();
      this.depth++;
    } else this.peekFail(MESSAGES.value);
  }

  private ident(rest: string): void {
    this.index++;
    for (const ch of rest) {
      const c = this.next();
      if (c === undefined) this.fail(MESSAGES.eofValue);
      if (c !== ch.charCodeAt(0)) this.fail(MESSAGES.ident);
    }
  }

  private digit(c: number | undefined): c is number {
    return c !== undefined && c >= 0x30 && c <= 0x39;
  }

  /** From the first digit (a '-' already eaten): integer, fraction, exponent, and the f64 range. */
  private number(): void {
    const start = this.index;
    const first = this.next();
    if (first === undefined) this.fail(MESSAGES.eofValue);
    if (first === 0x30) {
      if (this.digit(this.peek())) this.peekFail(MESSAGES.number);
    } else if (first >= 0x31 && first <= 0x39) {
      while (this.digit(this.peek())) this.index++;
    } else {
      this.fail(MESSAGES.number);
    }
    if (this.peek() === 0x2e) {
      this.index++;
      if (!this.digit(this.peek())) this.peekFail(this.peek() === undefined ? MESSAGES.eofValue : MESSAGES.number);
      while (this.digit(this.peek())) this.index++;
    }
    let significandZero = /^0*\.?0*$/.test(new TextDecoder().decode(this.b.subarray(start, this.index)));
    if (this.peek() === 0x65 || this.peek() === 0x45) {
      this.index++;
      let positiveExp = true;
      if (this.peek() === 0x2b) this.index++;
      else if (this.peek() === 0x2d) {
        this.index++;
        positiveExp = false;
      }
      const e0 = this.next();
      if (e0 === undefined) this.fail(MESSAGES.eofValue);
      if (!this.digit(e0)) this.fail(MESSAGES.number);
      let exp = e0 - 0x30;
      while (this.digit(this.peek())) {
        const d = (this.next() as number) - 0x30;
        if (exp > Math.floor((2_147_483_647 - d) / 10)) {
          // serde_json's parse_exponent_overflow: a huge positive exponent of a non-zero number is out of range just
          // past the digit that overflows; anything else is zero.
          if (!significandZero && positiveExp) this.fail(MESSAGES.range);
          while (this.digit(this.peek())) this.index++;
          significandZero = true;
          break;
        }
        exp = exp * 10 + d;
      }
    }
    // f64_from_parts: a non-zero value whose magnitude is beyond f64 is out of range, at the end of the number.
    if (!significandZero && !Number.isFinite(Number(new TextDecoder().decode(this.b.subarray(start, this.index)))))
      this.fail(MESSAGES.range);
  }

  /** After the opening quote: serde_json's parse_str with UTF-8 validation (escapes, control bytes, surrogates). */
  string(): void {
    for (;;) {
      const c = this.b[this.index];
      if (c === undefined) this.fail(MESSAGES.eofString);
      this.index++;
      if (c === 0x22) return;
      if (c < 0x20) this.fail(MESSAGES.control);
      if (c === 0x5c) this.escape();
    }
  }

  private escape(): void {
    const c = this.next();
    if (c === undefined) this.fail(MESSAGES.eofString);
    if ([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].includes(c)) return;
    if (c !== 0x75) this.fail(MESSAGES.escape);
    const n = this.hex4();
    if (n >= 0xdc00 && n <= 0xdfff) this.fail(MESSAGES.loneLeading);
    if (n < 0xd800 || n > 0xdbff) return;
    // A leading surrogate: `\u` and a trailing one must follow.
    for (const want of [0x5c, 0x75]) {
      const p = this.peek();
      if (p === undefined) this.fail(MESSAGES.eofString);
      this.index++;
      if (p !== want) this.fail(MESSAGES.hexEnd);
    }
    const n2 = this.hex4();
    if (n2 < 0xdc00 || n2 > 0xdfff) this.fail(MESSAGES.loneLeading);
  }

  private hex4(): number {
    if (this.index + 4 > this.b.length) {
      this.index = this.b.length;
      this.fail(MESSAGES.eofString);
    }
    const text = String.fromCharCode(...this.b.subarray(this.index, this.index + 4));
    this.index += 4;
    if (!/^[0-9a-fA-F]{4}$/.test(text)) this.fail(MESSAGES.escape);
    return Number.parseInt(text, 16);
  }

  private list(): void {
    let first = true;
    for (;;) {
      let c = this.ws();
      if (c === 0x5d) break;
      if (c === 0x2c && !first) {
        this.index++;
        c = this.ws();
      } else if (c === undefined) {
        this.peekFail(MESSAGES.eofList);
      } else if (!first) {
        this.peekFail(MESSAGES.listCommaOrEnd);
      }
      first = false;
      if (c === 0x5d) this.peekFail(MESSAGES.trailingComma);
      if (c === undefined) this.peekFail(MESSAGES.eofValue);
      this.value();
    }
    this.index++;
  }

  private object(): void {
    let first = true;
    for (;;) {
      let c = this.ws();
      if (c === 0x7d) break;
      if (c === 0x2c && !first) {
        this.index++;
        c = this.ws();
      } else if (c === undefined) {
        this.peekFail(MESSAGES.eofObject);
      } else if (!first) {
        this.peekFail(MESSAGES.objectCommaOrEnd);
      }
      first = false;
      if (c === 0x7d) this.peekFail(MESSAGES.trailingComma);
      if (c === undefined) this.peekFail(MESSAGES.eofValue);
      if (c !== 0x22) this.peekFail(MESSAGES.keyString);
      this.index++;
      this.string();
      const colon = this.ws();
      if (colon === undefined) this.peekFail(MESSAGES.eofObject);
      if (colon !== 0x3a) this.peekFail(MESSAGES.colon);
      this.index++;
      this.value();
    }
    this.index++;
  }
}

/** serde_json's error for these bytes as one JSON document (`from_str::<Value>`), or null when it would parse them. */
export function serdeJsonError(bytes: Uint8Array): string | null {
  const r = new Reader(bytes);
  try {
    r.value();
    if (r.ws() !== undefined) r.peekFail(MESSAGES.trailing);
    return null;
  } catch (error) {
    if (error instanceof SyntaxFault) return error.message;
    throw error;
  }
}
