/**
 * The API token: the server prints `http://127.0.0.1:PORT/#token=…`; the dashboard moves it into sessionStorage and
 * strips it from the fragment at once, so the token is not left in the address bar, the history or a screenshot.
 * The rest of the fragment is the view (`#/instances&token=…` opens the instances with that token).
 */
const KEY = "berth.api.token";

export function takeTokenFromLocation(): string | null {
  const hash = window.location.hash;
  const match = /(?:^#|&)token=([^&]*)/.exec(hash);
  if (match) {
    if (match[1]) sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
    const rest = hash.replace(match[0], match[0].startsWith("&") ? "" : "#").replace(/^#&/, "#");
    history.replaceState(null, "", window.location.pathname + window.location.search + (rest === "#" ? "" : rest));
  }
  return sessionStorage.getItem(KEY);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
