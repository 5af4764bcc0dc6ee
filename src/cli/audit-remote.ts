/**
 * The audit verbs through a `berth serve` (audit.ts decides when): the server reads, verifies and signs its own chains
 * (routes/audit.ts, routes/audit-operator.ts) and this file turns its answers into the documents and lines the verbs
 * print on the files — byte for byte for `export`, since each event is re-serialised with the same canonical
 * `exportLine`. A server holds two chains by name, `controller` and `k8s`; `--chain ID` picks one of them by its id
 * (a foreign copy imported into controller.db is read on the controller host with --local).
 */
import type { SignedCheckpoint } from "../core/chain/checkpoint.js";
import type { SealedEvent } from "../core/chain/event.js";
import type { VerifyResult } from "../core/chain/verify.js";
import { CliError } from "./errors.js";
import type { ServerTarget } from "./remote/http.js";
import { askServer, callServer, failed } from "./remote/server-verb.js";

export interface ServerChain {
  readonly name: "controller" | "k8s";
  readonly chain_id: string;
  readonly owner_key: string;
  readonly head: { seq: number; hash: string };
}

/** The chain `--chain` names among the server's (default: the controller's). */
export async function serverChain(t: ServerTarget, chain: string | undefined): Promise<ServerChain> {
  const { chains } = (await callServer(t, "GET", "/audit/chains")) as { chains: ServerChain[] };
  const wanted = chain ?? "controller";
  const found = chains.find((c) => c.name === wanted || c.chain_id === wanted);
  if (found) return found;
  const held = chains.map((c) => `${c.name} ${c.chain_id}`).join(", ") || "none yet";
  throw new CliError(
    `chain ${wanted} is not one the server at ${t.url} holds (${held}); a foreign copy imported into controller.db is read on the controller host with --local`,
  );
}

export async function verifyThrough(
  t: ServerTarget,
  chain: string | undefined,
  o: { key?: string; checkpoints: SignedCheckpoint[]; expectHead?: { seq: number; hash: string } },
): Promise<VerifyResult> {
  const c = await serverChain(t, chain);
  const body = {
    chain: c.name,
    ...(o.key ? { key: o.key } : {}),
    checkpoints: o.checkpoints,
    ...(o.expectHead ? { expect_head: o.expectHead } : {}),
  };
  return (await callServer(t, "POST", "/audit/verify", body)) as VerifyResult;
}

const PAGE = 1000;

/** Events `from`…`to` (inclusive) of a server chain, oldest first, a page at a time. */
export async function* eventsThrough(
  t: ServerTarget,
  c: ServerChain,
  from: number,
  to: number,
): AsyncGenerator<SealedEvent> {
  let after = from - 1;
  while (after < Math.min(to, c.head.seq)) {
    const limit = Math.max(1, Math.min(PAGE, to - after));
    const page = (await callServer(t, "GET", `/audit/events?chain=${c.name}&after=${after}&limit=${limit}`)) as {
      events: SealedEvent[];
    };
    if (page.events.length === 0) return;
    for (const e of page.events) {
      if (e.seq > to) return;
      yield e;
      after = e.seq;
    }
  }
}

/** The newest `n` events of a server chain. */
export async function tailThrough(
  t: ServerTarget,
  chain: string | undefined,
  n: number,
): Promise<{ chainId: string; events: SealedEvent[] }> {
  const c = await serverChain(t, chain);
  const events: SealedEvent[] = [];
  for await (const e of eventsThrough(t, c, Math.max(0, c.head.seq - n + 1), c.head.seq)) events.push(e);
  return { chainId: c.chain_id, events };
}

export async function checkpointsThrough(t: ServerTarget, c: ServerChain): Promise<SignedCheckpoint[]> {
  return ((await callServer(t, "GET", `/audit/checkpoints?chain=${c.name}`)) as { checkpoints: SignedCheckpoint[] })
    .checkpoints;
}

/** An import refused by the server is the local verb's refusal (exit 1, nothing written). */
export async function importThrough(
  t: ServerTarget,
  file: string,
  lines: string,
  key: string | undefined,
): Promise<{ chain_id: string; written: number }> {
  const a = await askServer(t, "POST", "/audit/import", { lines, ...(key ? { key } : {}) });
  if (a.status === 200) return a.body as { chain_id: string; written: number };
  const e = (a.body as { error?: { code?: string; message?: string } } | null)?.error;
  if (a.status === 422 && e?.code === "import_refused")
    throw new CliError(
      `import of ${file} refused, nothing written: ${String(e.message).replace(/^import refused, nothing written: /, "")}`,
      1,
    );
  throw failed(t, a);
}

export async function checkpointThrough(t: ServerTarget): Promise<SignedCheckpoint | null> {
  return ((await callServer(t, "POST", "/audit/checkpoint", {})) as { checkpoint: SignedCheckpoint | null }).checkpoint;
}
