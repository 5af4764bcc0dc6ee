/**
 * The API token: the server prints `http://127.0.0.1:PORT/#token=…`; the dashboard moves it into sessionStorage and
 * strips the fragment at once, so the token is not left in the address bar, the history or a screenshot.
 */
const KEY = "berth.api.token";

export function takeTokenFromLocation(): string | null {
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (match?.[1]) {
    sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  return sessionStorage.getItem(KEY);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
