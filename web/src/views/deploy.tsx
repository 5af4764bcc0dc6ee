/**
 * Deploy an agent: paste a spec or choose its file (YAML or JSON, the file `berth deploy` reads), and the dashboard
 * POSTs it to `/api/v1/agents` as JSON. A refusal shows the server's message and lists every field it names
 * (`body.spec.package`); a deploy shows its outcome and links to the agent. YAML is parsed here, by the `yaml`
 * package loaded only when a spec is not JSON, because the API takes JSON bodies only.
 */
import { useState } from "preact/hooks";
import { ApiError } from "../api";
import { AgentLink, InstanceLink } from "../links";
import { useLive } from "../live";
import { ErrorNotice } from "../notice";
import type { DeployOutcome } from "../types";

const EXAMPLE = `apiVersion: berth/v1
kind: Agent
metadata:
  name: my-agent
spec:
  target: mesh
  package: up/packages/heartbeat   # a directory; a relative path resolves against the server's data directory
`;

/** The spec as an object: JSON as it is, anything else as YAML (a superset of JSON). */
export async function parseSpec(
  text: string,
): Promise<{ ok: true; spec: Record<string, unknown> } | { ok: false; error: string }> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    try {
      const { parse } = await import("yaml");
      value = parse(text);
    } catch (e) {
      return { ok: false, error: `the spec is neither JSON nor YAML: ${(e as Error).message}` };
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, error: "the spec must be a mapping (apiVersion, kind, metadata, spec)" };
  return { ok: true, spec: value as Record<string, unknown> };
}

export function DeployView() {
  const { api, bump } = useLive();
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<DeployOutcome | null>(null);
  const [error, setError] = useState<unknown>(null);

  const deploy = async () => {
    setBusy(true);
    setOutcome(null);
    setError(null);
    try {
      const parsed = await parseSpec(text);
      if (!parsed.ok) throw new Error(parsed.error);
      setOutcome(await api.deploy(parsed.spec));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
      bump();
    }
  };

  const issues = error instanceof ApiError ? error.issues : [];
  return (
    <section aria-labelledby="deploy-title">
      <h2 id="deploy-title">Deploy an agent</h2>
      <p class="hint">
        The same spec <code>berth deploy FILE</code> reads. Deploying is idempotent: the same spec again changes
        nothing, and an agent never runs twice.
      </p>
      <form
        class="deploy-form"
        onSubmit={(e) => {
          e.preventDefault();
          void deploy();
        }}
      >
        <label for="deploy-file">Spec file</label>
        <input
          id="deploy-file"
          type="file"
          accept=".yaml,.yml,.json,application/json,application/yaml,text/yaml"
          onChange={async (e) => {
            const file = e.currentTarget.files?.[0];
            if (file) setText(await file.text());
          }}
        />
        <label for="deploy-spec">Agent spec</label>
        <textarea
          id="deploy-spec"
          rows={14}
          spellcheck={false}
          value={text}
          placeholder={EXAMPLE}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <div>
          <button type="submit" disabled={busy || text.trim() === ""}>
            Deploy
          </button>{" "}
          <button type="button" onClick={() => setText(EXAMPLE)}>
            Start from an example
          </button>
        </div>
      </form>
      <ErrorNotice error={error} action="Deploying" />
      {issues.length > 0 ? (
        <ul class="field-issues" aria-label="refused fields">
          {issues.map((i) => (
            <li key={i.path}>
              <code>{i.path}</code>: {i.message}
            </li>
          ))}
        </ul>
      ) : null}
      {outcome ? (
        <output class={outcome.ok ? "verified" : "broken"} aria-label="deploy outcome">
          {outcome.ok ? "Deployed " : "Not deployed: "}
          <AgentLink name={outcome.agent} />: {outcome.outcome}. {outcome.message}
          {outcome.instance ? (
            <>
              {" "}
              Instance <InstanceLink id={outcome.instance} />.
            </>
          ) : null}
        </output>
      ) : null}
    </section>
  );
}
