import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.jsx";

// The bridge's URL comes from the page's: /?bridge=http://127.0.0.1:8765/ (and &form=1 adds a form tool).
const query = new URLSearchParams(location.search);
const bridgeUrl = query.get("bridge") ?? "http://127.0.0.1:8765/";

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App bridgeUrl={bridgeUrl} withForm={query.get("form") === "1"} />
  </StrictMode>,
);
