import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { initializeWebMCPPolyfill } from "@mcp-b/webmcp-polyfill";
import { bridgeWebMCP, connect } from "agui-mcp-bridge";
import { App } from "./App.jsx";

const params = new URLSearchParams(location.search);
// /?bridge=http://127.0.0.1:8765/&runtime=<CopilotKit runtime URL>
const bridgeUrl = params.get("bridge") ?? "http://127.0.0.1:8765/";
const runtimeUrl = params.get("runtime") ?? "/api/copilotkit";

// document.modelContext where the browser has no native WebMCP; CopilotKit registers its tools there.
initializeWebMCPPolyfill();

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App runtimeUrl={runtimeUrl} />
  </StrictMode>,
);

// The app is up (and CopilotKit's tools registered) before the bridge is: bridgeWebMCP() serves the
// tools already on document.modelContext and those registered from now on.
const bridge = await connect({ url: bridgeUrl });
bridgeWebMCP(bridge);
document.getElementById("bridge").textContent = bridge.state;
bridge.addEventListener("statechange", (event) => {
  document.getElementById("bridge").textContent = event.detail.state;
});
