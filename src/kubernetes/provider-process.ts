/**
 * The provider as an OS process (spec/kubernetes.md §3.1): read stdin to EOF (8 MiB cap, the excess read and discarded),
 * answer with exactly one JSON line on stdout, keep stdout clean of everything else, bound stderr, then close every
 * socket, watch and timer and exit — explicitly, if the event loop has not drained within 2 s (P-21).
 */
import { randomBytes, randomInt } from "node:crypto";
import { homedir, tmpdir } from "node:os";
import { defaultBerthHome } from "../kit/home.js";
import { join } from "node:path";
import { providerPath } from "../core/kubernetes/path-env.js";
import { type K8sAudit, openExistingK8sChain, openFirstK8sChain } from "./audit.js";
import { realClock } from "../kit/clock.js";
import { connect } from "./connect.js";
import { boundedStderrLogger, type Logger } from "../kit/log.js";
import { handleProviderRequest, STDIN_CAP_BYTES, type StdinRead } from "./provider.js";
import { settingsFromEnv } from "./settings.js";

export function readStdin(stream: NodeJS.ReadableStream = process.stdin): Promise<StdinRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let oversized = false;
    stream.on("data", (chunk: Buffer | string) => {
      const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      if (kept + buf.length > STDIN_CAP_BYTES) {
        oversized = true;
        const room = STDIN_CAP_BYTES - kept;
        if (room > 0) chunks.push(buf.subarray(0, room));
        kept = STDIN_CAP_BYTES;
        return;
      }
      chunks.push(buf);
      kept += buf.length;
    });
    stream.on("end", () => resolve({ ok: true, value: { bytes: Buffer.concat(chunks), oversized } }));
    stream.on("error", (e: Error) => resolve({ ok: false, error: e.message }));
  });
}

/** Where the standalone backend keeps its own chain: the berth home (src/kit/home.ts)/k8s.db, role `k8s`. */
export function providerHome(env: NodeJS.ProcessEnv): string {
  return defaultBerthHome({ env, userHome: env.HOME ?? homedir(), uid: process.getuid?.() ?? -1 });
}

/**
 * Where a deploy's chain goes when the home cannot be opened (issue 18.7): `$XDG_STATE_HOME/berth`, then a per-user
 * directory under the system's temporary directory. The stderr log names the home that was used.
 */
export function providerHomes(env: NodeJS.ProcessEnv): string[] {
  const homes = [providerHome(env)];
  if (env.XDG_STATE_HOME) homes.push(join(env.XDG_STATE_HOME, "berth"));
  homes.push(join(tmpdir(), `berth-${process.getuid?.() ?? "user"}`, "k8s"));
  return [...new Set(homes)];
}

function openDeployChain(env: NodeJS.ProcessEnv, log: Logger): K8sAudit {
  const opened = openFirstK8sChain(providerHomes(env));
  if (!opened.ok) throw new Error(opened.error);
  for (const s of opened.value.skipped)
    log.warn(`audit chain: could not open ${s.home} (${s.error}); recording in ${opened.value.home} instead`);
  return opened.value.audit;
}

export async function runProviderProcess(args: readonly string[], version: string): Promise<never> {
  const processStartedAt = 0; // performance.now() counts from process start (§8.2 provider mode)
  const write = (t: string) => process.stderr.write(t);
  const log = boundedStderrLogger(write);
  // Library console output would corrupt the one-line answer: send all of it to stderr.
  for (const method of ["log", "info", "debug", "warn", "error", "trace"] as const) {
    console[method] = (...parts: unknown[]) =>
      log.info(
        parts
          .map((p) => (typeof p === "string" ? p : "[object]"))
          .join(" ")
          .slice(0, 200),
      );
  }
  // §8.1 step 1: exec credential plugins resolve through PATH; GUI callers hand over a minimal one.
  process.env.PATH = providerPath(process.env.PATH, process.env.HOME);
  const stdin = await readStdin();
  const settings = settingsFromEnv(process.env);
  let exitCode = 0;
  let line: string;
  if (!settings.ok) {
    line = JSON.stringify({ ok: false, error: settings.error });
  } else {
    const result = await handleProviderRequest(args, stdin, {
      clock: realClock,
      processStartedAt,
      settings: settings.value,
      version,
      log,
      random32: () => randomBytes(4).readUInt32BE(0),
      randomChars: () => Array.from({ length: 6 }, () => randomInt(36)),
      openAudit: () => openDeployChain(process.env, log),
      openExistingAudit: () => {
        try {
          return openExistingK8sChain(providerHome(process.env));
        } catch (error) {
          log.warn(
            `audit chain: could not open the existing chain (${error instanceof Error ? error.message : String(error)})`,
          );
          return null;
        }
      },
      connect: (context) => connect(context),
    });
    if (result.kind === "unreadable") {
      write(`${result.stderr}\n`);
      log.flush();
      process.exit(1);
    }
    line = JSON.stringify(result.answer);
  }
  log.flush();
  await new Promise<void>((resolve) => process.stdout.write(`${line}\n`, () => resolve()));
  process.exitCode = exitCode;
  exitCode = 0;
  // Sockets and timers were closed by the handler; exit explicitly if anything still holds the loop.
  setTimeout(() => process.exit(0), 2000).unref();
  return new Promise<never>(() => {});
}
