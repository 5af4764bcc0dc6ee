// Reads vitest's JSON reports, one per tier run (the machine's Node, Node 24), and prints the closing line CI reads:
// `N passed, N failed, N skipped`, summed over all of them.
// Usage: node scripts/summarise-tests.mjs REPORT STATUS [REPORT STATUS]...
// Exits non-zero when anything failed, when a runner itself failed or left no report, or when no test ran at all.
import { existsSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);
let passed = 0;
let failed = 0;
let skipped = 0;
// The failures by name, printed just above the closing line: CI keeps only the tail of a run's output, and a failure
// that cannot be named there cannot be diagnosed (a whole submission was once lost to one test nobody could name).
const failures = [];
for (let i = 0; i < args.length; i += 2) {
  const file = args[i];
  const runnerStatus = Number(args[i + 1] ?? 0);
  if (!file || !existsSync(file)) {
    console.error(`no test report at ${file}: the test runner did not finish`);
    failed += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(file, "utf8"));
  const tierFailed =
    (report.numFailedTests ?? 0) +
    // A suite that fails to load (a syntax error, a hook that throws) counts as a failure even if no test ran.
    (report.testResults ?? []).filter((s) => s.status === "failed" && s.assertionResults.length === 0).length;
  for (const suite of report.testResults ?? []) {
    const where = String(suite.name ?? "?").replace(`${process.cwd()}/`, "");
    if (suite.status === "failed" && suite.assertionResults.length === 0)
      failures.push(`${where}: ${firstLine(suite.message)}`);
    for (const t of suite.assertionResults ?? []) {
      if (t.status === "failed")
        failures.push(`${where} › ${t.fullName ?? t.title}: ${firstLine(t.failureMessages?.[0])}`);
    }
  }
  passed += report.numPassedTests ?? 0;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  failed += tierFailed;
  if (runnerStatus !== 0 && tierFailed === 0) {
    console.error(`${file}: the test runner exited with status ${runnerStatus} although no test failed`);
    failed += 1;
  }
}
if (passed + failed === 0) {
  console.error("no test was executed");
  failed = 1;
}
for (const f of failures) console.log(`FAILED ${f}`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);

function firstLine(text) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: colour codes are stripped from the message
  const plain = String(text ?? "").replace(/\u001b\[[0-9;]*m/g, "");
  const line = plain.split("\n").find((l) => l.trim() !== "") ?? "";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
