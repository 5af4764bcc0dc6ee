/**
 * A destructive action asks first (issue 36: the dashboard stopped and unloaded on one click; Headlamp and the Nomad
 * UI confirm). The first click on the button turns it into the question, a "Confirm: LABEL" button and "Cancel", in
 * place, so the answer is next to what it is about; nothing runs until the confirm. Shared by every destructive
 * button (instance stop and unload, agent stop; any later delete or forget).
 */
import { useState } from "preact/hooks";

export function ConfirmButton({
  label,
  question,
  disabled,
  onConfirm,
}: {
  label: string;
  question: string;
  disabled?: boolean;
  onConfirm: () => void;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <fieldset class="confirm" aria-label={`confirm ${label}`}>
      {question}{" "}
      <button
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {`Confirm: ${label}`}
      </button>{" "}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </fieldset>
  );
}
