/** Small helpers for benchmarks: timed loops and a uniform report. Figures are printed, never asserted. */
export function rate(label: string, iterations: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(50, iterations); i++) fn(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn(i);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const perSecond = iterations / seconds;
  console.log(`  ${label.padEnd(48)} ${perSecond.toFixed(0).padStart(10)} /s`);
  return perSecond;
}

export function ratio(label: string, value: number, baseline: number, target?: number): void {
  const r = value / baseline;
  const verdict =
    target === undefined
      ? ""
      : r >= target
        ? `  (target ≥ ${(target * 100).toFixed(0)}%: met)`
        : `  (target ≥ ${(target * 100).toFixed(0)}%: NOT met)`;
  console.log(`  ${label.padEnd(48)} ${(r * 100).toFixed(1).padStart(9)}%${verdict}`);
}

/** A numeric `--name N` flag of this benchmark's command line, or `fallback` when it is absent or not a number. */
export function numberFlag(name: string, fallback: number): number {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(name);
  const value = i >= 0 ? Number(argv[i + 1]) : Number.NaN;
  return Number.isFinite(value) ? value : fallback;
}
