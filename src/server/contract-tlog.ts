/**
 * The Merkle routes of the controller chain (issue 38): inclusion and consistency proofs as documents anyone can check
 * offline with only the owner's public key (`berth audit verify --proof FILE`, or any RFC 9162 verifier), and the tree
 * served read-only in the C2SP tlog-tiles layout, so a monitor can mirror and check the chain without berth. Pure
 * data, like contract.ts (which lists these routes after its own); the handlers are routes/tlog.ts.
 *
 * Read-only and private like every audit read (the bearer token, the Host rule): none is chained. Only the
 * controller chain: its notes are signed by the server's own key, which owns that chain and no other.
 */
import { z } from "zod";
import { ConsistencyDocument, InclusionDocument } from "../core/chain/proof-check.js";
import type { RouteSpec } from "./route-spec.js";

const Count = (what: string) =>
  z.coerce
    .number({ error: "must be a decimal integer" })
    .int("must be a decimal integer")
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .meta({ description: what });

export const TlogInputs = {
  inclusionQuery: z.strictObject({
    seq: Count("the event's seq (its leaf index)"),
    size: Count(
      "the tree size to prove it under (default: every event the chain holds now); the note in the answer signs this tree",
    )
      .pipe(z.number().min(1, "must be at least 1"))
      .optional(),
  }),
  consistencyQuery: z.strictObject({
    old: Count("the older tree size (a checkpoint you hold)").pipe(z.number().min(1, "must be at least 1")),
    new: Count("the newer tree size (default: every event the chain holds now)")
      .pipe(z.number().min(1, "must be at least 1"))
      .optional(),
  }),
  tile: z.strictObject({
    tile: z
      .string()
      .max(64)
      .regex(/^[0-9a-z./]+$/, "must be a tile path in plain characters (percent escapes are refused)")
      .meta({
        description:
          "the rest of the path, slashes included: `<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]` (C2SP tlog-tiles; N as x-prefixed groups of three digits)",
      }),
  }),
} as const;

const ChainRef = { chain_id: z.string() };

export const TLOG_ROUTES: readonly RouteSpec[] = [
  {
    id: "auditProofInclusion",
    method: "GET",
    path: "/audit/proof/inclusion",
    tag: "audit",
    summary:
      "RFC 9162 inclusion proof of one controller-chain event, with the signed checkpoint note of the tree it is proved under; check it offline with `berth audit verify --proof FILE --pubkey KEY`",
    query: TlogInputs.inclusionQuery,
    status: 200,
    response: InclusionDocument.extend(ChainRef),
    errors: [404, 409],
  },
  {
    id: "auditProofConsistency",
    method: "GET",
    path: "/audit/proof/consistency",
    tag: "audit",
    summary:
      "RFC 9162 consistency proof that the controller chain's tree of `old` events is a prefix of its tree of `new`, with both signed checkpoint notes",
    query: TlogInputs.consistencyQuery,
    status: 200,
    response: ConsistencyDocument.extend(ChainRef),
    errors: [404, 409],
  },
  {
    id: "tlogCheckpoint",
    method: "GET",
    path: "/audit/tlog/checkpoint",
    tag: "audit",
    summary:
      "C2SP tlog-tiles: the newest chained checkpoint of the controller chain as a signed note (tlog-checkpoint): origin, tree size, root",
    status: 200,
    response: z.string(),
    produces: "text/plain",
    errors: [404, 409],
  },
  {
    id: "tlogTile",
    method: "GET",
    path: "/audit/tlog/tile/{tile}",
    rest: true,
    tag: "audit",
    summary:
      "C2SP tlog-tiles: a tile of the controller chain's Merkle tree (`tile/<L>/<N>[.p/<W>]`: W hashes of 32 bytes at level 8·L) or an entry bundle (`tile/entries/<N>[.p/<W>]`: each event hash as a big-endian uint16 length and 32 bytes); 404 for a tile the tree does not hold yet",
    params: TlogInputs.tile,
    status: 200,
    response: z.string(),
    produces: "application/octet-stream",
    errors: [404],
  },
];
