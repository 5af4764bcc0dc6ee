/** The dashboard's entry: take the token from the URL fragment, then render the app (or say how to get a token). */
import { render } from "preact";
import { App, NoToken } from "./app";
import { takeTokenFromLocation } from "./session";
import "./styles.css";

const root = document.getElementById("app");
if (root === null) throw new Error("index.html has no #app element");
const token = takeTokenFromLocation();
render(token ? <App token={token} /> : <NoToken />, root);
