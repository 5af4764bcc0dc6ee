/**
 * The explain view of a placement (issue 8 §3): every candidate the engine considered, in its ranking, with each
 * rejection under its stable constraint name and the score breakdown of the eligible ones; then every attempt the
 * controller made and its outcome. The same view serves a dry run (no attempts yet) and a past decision.
 */
import { points, shortId } from "./format";
import { InstanceLink } from "./links";
import { href } from "./route";
import { TableHead } from "./table";
import type { CandidateReport, DecisionReport } from "./types";

/** The score members NodeReport carries (the document types the breakdown as an open record). */
const SCORE_PARTS: ReadonlyArray<readonly [string, string]> = [
  ["execution_centi", "execution"],
  ["locality_centi", "locality"],
  ["accel_fit_centi", "accel fit"],
  ["perf_centi", "perf"],
  ["load_centi", "load"],
  ["stickiness_centi", "stickiness"],
];

/** A stored attempt row is an open record; a report's attempt names its members. Either way, a string or nothing. */
const textOf = (v: unknown): string => (typeof v === "string" ? v : "");
const numberOr = (v: unknown): number | null => (typeof v === "number" ? v : null);

function nodeLabel(c: { node_id: string; name?: string | null }) {
  return (
    <a href={href("nodes", c.node_id)} title={c.node_id}>
      {c.name ?? "unnamed"} <code>{shortId(c.node_id)}</code>
    </a>
  );
}

function Candidate({ c, rank, chosen }: { c: CandidateReport; rank: number; chosen: boolean }) {
  return (
    <tr class={chosen ? "chosen" : c.eligible ? "" : "rejected"}>
      <td>{rank}</td>
      <td>{nodeLabel(c)}</td>
      <td>{chosen ? "chosen" : c.eligible ? "eligible" : "rejected"}</td>
      <td>{c.route ? `${c.variant ?? "—"} (${c.execution ?? c.route})` : "—"}</td>
      <td class="num">{points(c.total_centi)}</td>
      {SCORE_PARTS.map(([key]) => (
        <td class="num" key={key}>
          {points(numberOr(c.score?.[key]))}
        </td>
      ))}
      <td>{c.flags.join(", ") || "—"}</td>
      <td>
        {c.rejections.length === 0 ? (
          "—"
        ) : (
          <ul class="rejections">
            {c.rejections.map((r) => (
              <li key={r.constraint + r.detail}>
                <code>{r.constraint}</code>: {r.detail}
              </li>
            ))}
          </ul>
        )}
      </td>
    </tr>
  );
}

export function ExplainView({
  report,
  title,
  dryRun = false,
}: {
  report: DecisionReport;
  title: string;
  dryRun?: boolean;
}) {
  const d = report.decision;
  const attempts = report.attempts;
  // A past decision (GET /placements/{id}) carries its state and dry_run; a fresh report says whether it is unsettled.
  const past = "state" in report ? report : null;
  const fresh = "state" in report ? null : report;
  const nothingSent = dryRun || past?.dry_run === true;
  return (
    <section class="explain" aria-label={title}>
      <h3>{title}</h3>
      <p>
        <strong>{d.name}</strong> ({d.kind}, package <code>{shortId(d.package_id, 12)}</code>) — decision{" "}
        <code title={report.decision_id}>{shortId(report.decision_id, 12)}</code>
        {nothingSent ? ", a dry run: nothing was sent" : past ? `, ${past.state}` : ""}.{" "}
        {d.placement === null
          ? "Nothing fits: no candidate is eligible."
          : `Chosen: ${d.candidates.find((c) => c.node_id === d.placement?.node_id)?.name ?? d.placement.node_id} (${points(numberOr(d.placement.total_centi))} points).`}
        {fresh?.unsettled ? " The decision is unsettled: its node may hold the instance." : ""}
      </p>
      <table aria-label={`candidates for ${d.name}`}>
        <thead>
          <tr>
            <th scope="col">rank</th>
            <th scope="col">node</th>
            <th scope="col">verdict</th>
            <th scope="col">variant</th>
            <th scope="col">total</th>
            {SCORE_PARTS.map(([key, label]) => (
              <th scope="col" key={key}>
                {label}
              </th>
            ))}
            <th scope="col">flags</th>
            <th scope="col">rejections</th>
          </tr>
        </thead>
        <tbody>
          {d.candidates.map((c, i) => (
            <Candidate key={c.node_id} c={c} rank={i + 1} chosen={c.node_id === d.placement?.node_id} />
          ))}
        </tbody>
      </table>
      {nothingSent ? null : attempts.length === 0 ? (
        <p>No attempt was made.</p>
      ) : (
        <table aria-label={`attempts for ${d.name}`}>
          <TableHead columns={["#", "node", "variant", "outcome", "reason", "next", "instance"]} />
          <tbody>
            {attempts.map((a, i) => (
              <tr key={`${a.node_id}-${i}`}>
                <td>{"n" in a ? a.n : i + 1}</td>
                <td>
                  {nodeLabel({
                    node_id: a.node_id,
                    name: d.candidates.find((c) => c.node_id === a.node_id)?.name ?? null,
                  })}
                </td>
                <td>{a.variant}</td>
                <td>{a.outcome ?? ("state" in a ? a.state : "—")}</td>
                <td>{textOf(a.code) ? `${textOf(a.code)}: ${textOf(a.reason)}` : textOf(a.reason) || "—"}</td>
                <td>{textOf(a.next) || "—"}</td>
                <td>
                  <InstanceLink id={textOf(a.instance_id)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {report.explain ? (
        <details>
          <summary>Explain as text</summary>
          <pre>{report.explain}</pre>
        </details>
      ) : null}
    </section>
  );
}
