/**
 * `berth context add|use|list|current|remove`: named `berth serve` endpoints, the way kubectl and nomad name
 * clusters (remote/contexts.ts holds the file, remote/target.ts the order in which a verb picks its controller).
 * `berth context use local` goes back to this machine's files. Registration loads only commander (issue 19).
 */
import type { Command } from "commander";
import { CliError } from "./errors.js";
import { answer } from "./output.js";
import { stdoutPalette } from "./style.js";
import { renderTable } from "./table.js";

/** The name `use` takes for "no context": this machine's files (or the home's running serve). */
const LOCAL = "local";

export function registerContextCommands(program: Command): void {
  const context = program
    .command("context")
    .description(
      "named berth servers to run every verb against (like kubectl contexts); `berth context use local` for this machine",
    );

  context
    .command("add <name>")
    .description(
      "name a `berth serve` by its URL and the file holding its API token; checks that it answers unless --no-check",
    )
    .requiredOption("--server <url>", "the server's URL, e.g. https://controller.example:7420")
    .requiredOption("--token-file <file>", "a file (mode 0600) holding the server's api.token")
    .option(
      "--ca-file <pem>",
      "trust this CA, or the server's own self-signed certificate (PEM), instead of the system's CAs",
    )
    .option(
      "--pin-sha256 <hex>",
      "require the server's certificate to have this SHA-256 fingerprint (`openssl x509 -noout -fingerprint -sha256`)",
    )
    .option(
      "--insecure-http",
      "accept an http:// server on another host: the API token then crosses the network in clear (warned at each use)",
    )
    .option("--use", "make it the current context")
    .option("--no-check", "save it without asking the server")
    .option("--json", "print one JSON document")
    .action(
      async (
        name: string,
        opts: {
          server: string;
          tokenFile: string;
          caFile?: string;
          pinSha256?: string;
          insecureHttp?: boolean;
          use?: boolean;
          check: boolean;
          json?: boolean;
        },
      ) => {
        const { resolve } = await import("node:path");
        const { ContextNameSchema, ContextSchema, contextsPath, readContexts, writeContexts } = await import(
          "./remote/contexts.js"
        );
        const { describeZodIssues, invalidInput } = await import("./errors.js");
        if (name === LOCAL)
          throw new CliError(`"${LOCAL}" is reserved: \`berth context use local\` means this machine's files`);
        const n = ContextNameSchema.safeParse(name);
        if (!n.success) throw invalidInput(describeZodIssues("NAME", n.error.issues));
        const parsed = ContextSchema.safeParse({
          server: opts.server,
          token_file: resolve(opts.tokenFile),
          ...(opts.caFile ? { ca_file: resolve(opts.caFile) } : {}),
          ...(opts.pinSha256 ? { pin_sha256: opts.pinSha256 } : {}),
          ...(opts.insecureHttp ? { insecure_http: true } : {}),
        });
        if (!parsed.success)
          throw invalidInput(
            describeZodIssues(
              "context",
              parsed.error.issues.map((i) => ({
                ...i,
                path: i.path.map((p) => `--${String(p).replace(/_/g, "-").replace("token-file", "token-file")}`),
              })),
            ),
          );
        const { contextTarget, plainHttpBeyondMachine } = await import("./remote/target.js");
        // Issue 33 item 14: refused before the token file is even read, so nothing is sent and nothing saved.
        const plain = plainHttpBeyondMachine(parsed.data.server);
        if (plain !== null && !opts.insecureHttp) {
          throw new CliError(
            `--server ${parsed.data.server} is plain HTTP to another host (${plain}): every verb would send the API token in clear. Use https:// (berth serve --tls-cert/--tls-key), or add --insecure-http to accept that. Nothing was saved`,
            2,
            { kind: "refused" },
          );
        }
        // Reads the token and the PEM now: a context that cannot be used is refused, not saved.
        const target = contextTarget(n.data, parsed.data);
        let version: string | null = null;
        if (opts.check) {
          const { apiRequest } = await import("./remote/http.js");
          const health = await apiRequest(target, "GET", "/health");
          if (health.status !== 200)
            throw new CliError(
              `${opts.server} answered ${health.status} to /api/v1/health: is it a berth serve? Nothing was saved`,
              1,
              { kind: "refused" },
            );
          version = String((health.body as { version?: unknown }).version ?? "");
          const authed = await apiRequest(target, "GET", "/unsettled");
          if (authed.status === 401)
            throw new CliError(
              `${opts.server} refused the token in ${opts.tokenFile}; copy the server's current api.token there. Nothing was saved`,
              2,
              { kind: "unauthorized" },
            );
        }
        const file = readContexts();
        const replaced = n.data in file.contexts;
        writeContexts({
          current: opts.use ? n.data : file.current,
          contexts: { ...file.contexts, [n.data]: parsed.data },
        });
        answer(
          opts.json,
          {
            ok: true,
            name: n.data,
            ...parsed.data,
            current: opts.use === true || file.current === n.data,
            checked: opts.check,
            server_version: version,
            file: contextsPath(),
          },
          `${replaced ? "updated" : "added"} context ${n.data} → ${parsed.data.server}${version ? ` (berth ${version})` : ""}${opts.use ? "; it is the current context" : `; \`berth context use ${n.data}\` makes it current`}`,
        );
      },
    );

  context
    .command("use <name>")
    .description("make NAME the current context; `local` for this machine's files")
    .option("--json", "print one JSON document")
    .action(async (name: string, opts: { json?: boolean }) => {
      const { contextNamed, readContexts, writeContexts } = await import("./remote/contexts.js");
      const file = readContexts();
      if (name !== LOCAL) contextNamed(file, name);
      writeContexts({ ...file, current: name === LOCAL ? null : name });
      answer(
        opts.json,
        { ok: true, current: name === LOCAL ? null : name },
        name === LOCAL
          ? "no current context: verbs use this machine's files (or the berth serve running on the home)"
          : `current context: ${name}`,
      );
    });

  context
    .command("list")
    .description("the contexts, the current one marked with *")
    .option("--json", "print one JSON document")
    .action(async (opts: { json?: boolean }) => {
      const { readContexts } = await import("./remote/contexts.js");
      const file = readContexts();
      const rows = Object.entries(file.contexts).map(([name, c]) => [
        name === file.current ? "*" : "",
        name,
        c.server,
        c.pin_sha256 ? "pinned" : c.ca_file ? "ca file" : c.server.startsWith("https:") ? "system CAs" : "none (http)",
        c.token_file,
      ]);
      answer(
        opts.json,
        { current: file.current, contexts: Object.entries(file.contexts).map(([name, c]) => ({ name, ...c })) },
        rows.length === 0
          ? "no contexts; add one with `berth context add NAME --server URL --token-file FILE`"
          : renderTable(["CURRENT", "NAME", "SERVER", "TLS TRUST", "TOKEN FILE"], rows, {
              palette: stdoutPalette(opts.json),
            }),
      );
    });

  context
    .command("current")
    .description(
      "which controller verbs talk to now, and why (BERTH_ADDR, BERTH_CONTEXT, the current context, a running serve, or the local files)",
    )
    .option("--data-dir <dir>", "berth home to look for a running serve in")
    .option("--json", "print one JSON document")
    .action(async (opts: { dataDir?: string; json?: boolean }, cmd: Command) => {
      const { resolveController } = await import("./remote/target.js");
      const t = await resolveController({
        ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
        explicitHome: cmd.getOptionValueSource("dataDir") === "cli",
      });
      const doc =
        t.kind === "local"
          ? { kind: "local", home: t.home, server: null, via: "local files" }
          : { kind: "server", server: t.server.url, via: t.server.via, home: null };
      answer(opts.json, doc, t.kind === "local" ? `local files in ${t.home}` : `${t.server.url} (${t.server.via})`);
    });

  context
    .command("remove <name>")
    .description("forget a context (its token file is left alone)")
    .option("--json", "print one JSON document")
    .action(async (name: string, opts: { json?: boolean }) => {
      const { contextNamed, readContexts, writeContexts } = await import("./remote/contexts.js");
      const file = readContexts();
      contextNamed(file, name);
      const { [name]: _gone, ...rest } = file.contexts;
      writeContexts({ current: file.current === name ? null : file.current, contexts: rest });
      answer(
        opts.json,
        { ok: true, removed: name, current: file.current === name ? null : file.current },
        `removed context ${name}${file.current === name ? "; no current context now" : ""}`,
      );
    });
}
