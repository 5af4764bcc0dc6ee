/** What the `berth node` verbs' flags share: key lists, labels, the default data directory. */
import { join } from "node:path";
import { CliError, invalidInput } from "./errors.js";
import { berthHome } from "./paths.js";

// A plain pattern rather than a zod schema: registration stays light (issue 19); the message names the flag the same way.
const HEX_KEY = /^[0-9a-f]{64}$/;
export const collect = (value: string, previous: string[] = []) => [...previous, value];

export function keys(flag: string, values: string[] | undefined): string[] {
  return (values ?? []).map((v) => {
    if (!HEX_KEY.test(v))
      throw invalidInput(`${flag}: value: must be 64 lowercase hex characters (an Ed25519 public key)`);
    return v;
  });
}

export function labels(values: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const i = v.indexOf("=");
    if (i <= 0) throw new CliError(`--label: value ${JSON.stringify(v)} must look like key=value`);
    out[v.slice(0, i)] = v.slice(i + 1);
  }
  return out;
}

export const defaultDataDir = () => join(berthHome(), "node");
