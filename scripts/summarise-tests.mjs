// Reads vitest's JSON report and prints the closing line CI reads: `N passed, N failed, N skipped`.
// Exits non-zero when anything failed, when the runner itself failed, or when no test ran at all.
import { readFileSync, existsSync } from "node:fs";

const [file, runnerStatus] = process.argv.slice(2);
if (!file || !existsSync(file)) {
  console.error(`no test report at ${file}: the test runner did not finish`);
  console.log("0 passed, 1 failed, 0 skipped");
  process.exit(1);
}
const report = JSON.parse(readFileSync(file, "utf8"));
const passed = report.numPassedTests ?? 0;
let failed = report.numFailedTests ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
// A suite that fails to load (a syntax error, a hook that throws) counts as a failure even if no test ran.
const brokenSuites = (report.testResults ?? []).filter((s) => s.status === "failed" && s.assertionResults.length === 0).length;
failed += brokenSuites;
if (passed + failed === 0) {
  console.error("no test was executed");
  failed = 1;
}
const runnerFailed = Number(runnerStatus) !== 0 && failed === 0;
if (runnerFailed) failed = 1;
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 ? 1 : 0);
