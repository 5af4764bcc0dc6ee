/**
 * "Place a package": pick one of the packages the controller can place, name the instance, look at the dry-run
 * explain (nothing sent), then place it and see the report: the decision, every attempt and the instance.
 */
import { useState } from "preact/hooks";
import { ExplainView } from "../explain";
import { useLive, useResource } from "../live";
import { ErrorNotice, Loading } from "../notice";
import type { PlaceOrder, PlaceReport } from "../types";

export function PlaceView() {
  const { api, bump } = useLive();
  const packages = useResource(({ api }) => api.packages());
  const [pkg, setPkg] = useState("");
  const [name, setName] = useState("");
  const [allowEmulated, setAllowEmulated] = useState(false);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ kind: "explain" | "placed"; report: PlaceReport } | null>(null);
  const [error, setError] = useState<{ action: string; error: unknown } | null>(null);

  const list = packages.data?.packages ?? [];
  const chosen = pkg || list[0]?.package_id || "";
  const order = (): PlaceOrder => ({
    package: chosen,
    name: name.trim() === "" ? null : name.trim(),
    allow_emulated: allowEmulated,
  });

  const submit = async (kind: "explain" | "placed") => {
    setBusy(true);
    setError(null);
    setOutcome(null);
    try {
      const report = kind === "explain" ? await api.explain(order()) : await api.place(order());
      setOutcome({ kind, report });
    } catch (e) {
      setError({ action: kind === "explain" ? "The dry run" : "Placing", error: e });
    } finally {
      setBusy(false);
      if (kind === "placed") bump();
    }
  };

  return (
    <section aria-labelledby="place-title">
      <h2 id="place-title">Place a package</h2>
      <ErrorNotice error={packages.error} action="Listing the packages" />
      {!packages.data && !packages.error ? <Loading what="packages" /> : null}
      <form
        class="place-form"
        onSubmit={(e) => {
          e.preventDefault();
          void submit("placed");
        }}
      >
        <label for="place-package">Package</label>
        <select id="place-package" value={chosen} onChange={(e) => setPkg(e.currentTarget.value)} required>
          {list.length === 0 ? <option value="">no package registered</option> : null}
          {list.map((p) => (
            <option key={p.package_id} value={p.package_id}>
              {p.name} {p.version} ({p.kind}) {p.package_id.slice(0, 8)}
            </option>
          ))}
        </select>
        <label for="place-name">Name</label>
        <input
          id="place-name"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
          placeholder="default: the package's name"
          pattern="[a-z0-9][a-z0-9\-]{0,62}"
        />
        <label>
          <input type="checkbox" checked={allowEmulated} onChange={(e) => setAllowEmulated(e.currentTarget.checked)} />{" "}
          Allow emulated
        </label>
        <button type="button" disabled={busy || chosen === ""} onClick={() => void submit("explain")}>
          Explain (dry run)
        </button>
        <button type="submit" disabled={busy || chosen === ""}>
          Place
        </button>
      </form>
      {error ? <ErrorNotice error={error.error} action={error.action} /> : null}
      {outcome?.kind === "placed" ? (
        <output class="placed">
          {outcome.report.placed
            ? `Placed ${outcome.report.placed.name} as instance ${outcome.report.placed.instance_id}.`
            : outcome.report.unsettled
              ? "The decision is unsettled: its node may hold the instance. Settle it from Unsettled decisions."
              : "Not placed: no candidate took it (see the attempts)."}
        </output>
      ) : null}
      {outcome ? (
        <ExplainView
          report={outcome.report}
          title={outcome.kind === "explain" ? "Dry-run explain" : "Placement report"}
          dryRun={outcome.kind === "explain"}
        />
      ) : null}
    </section>
  );
}
