/** Lowercase hex helpers and the shape checks every signed document uses. */

const HEX = /^[0-9a-f]*$/;

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Decodes lowercase hex of an exact byte length; returns undefined for anything else (never throws). */
export function fromHex(hex: string, byteLength?: number): Uint8Array | undefined {
  if (typeof hex !== "string" || hex.length % 2 !== 0 || !HEX.test(hex)) return undefined;
  if (byteLength !== undefined && hex.length !== byteLength * 2) return undefined;
  return new Uint8Array(Buffer.from(hex, "hex"));
}

export function isLowerHex(value: unknown, byteLength: number): value is string {
  return typeof value === "string" && value.length === byteLength * 2 && HEX.test(value);
}
