import { HttpAgent } from "@ag-ui/client";
import { DECLINE, serveFrontendTools, toolContent } from "/work/main/web_client/agui-app.js";
const agent = new HttpAgent({ url: "http://127.0.0.1:8765/agui/run" });
const done: Promise<void> = serveFrontendTools(agent, [
  { name: "a", description: "A.", interrupt: true, handler: async () => DECLINE },
  { name: "b", handler: (args: { n: number }, { signal }) => signal.aborted ? "" : { n: args.n } },
  { name: "c", handler: () => toolContent([{ type: "text", text: "c" }]) },
], { signal: new AbortController().signal, onRegistered: (tools) => tools.map((t) => t.name) });
void done;
