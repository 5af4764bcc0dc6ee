/**
 * Diagnostics for the Kubernetes shell: JSON lines on stderr, never stdout (in provider mode stdout carries exactly
 * one answer line). Bounded per process (§3.1 step 5): after the budget, lines are counted and reported once. Callers
 * pass names and verdicts only — never a secret, key, env value, auth tag or kubelet message.
 */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  flush(): void;
}

export function boundedStderrLogger(
  write: (text: string) => void = (t) => process.stderr.write(t),
  budgetBytes = 32 * 1024,
): Logger {
  let used = 0;
  let dropped = 0;
  const emit = (level: string, msg: string, fields?: Record<string, unknown>) => {
    const line = `${JSON.stringify({ level, time: new Date().toISOString(), msg, ...(fields ?? {}) })}\n`;
    const size = Buffer.byteLength(line);
    if (used + size > budgetBytes - 128) {
      dropped++;
      return;
    }
    used += size;
    write(line);
  };
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    flush: () => {
      if (dropped > 0)
        write(`${JSON.stringify({ level: "warn", msg: `stderr budget reached: ${dropped} log lines dropped` })}\n`);
      dropped = 0;
    },
  };
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {}, flush: () => {} };

/** A logger that keeps lines in memory (tests assert what was and was not logged). */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push(JSON.stringify({ level, msg, ...(fields ?? {}) }));
  };
  return { lines, info: push("info"), warn: push("warn"), error: push("error"), flush: () => {} };
}
