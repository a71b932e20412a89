// A React app whose components register tools with agui-mcp-bridge's hooks (tests/test_npm_package.py).
import { useEffect, useState } from "react";
import { BridgeProvider, useBridge, useBridgeStatus, useBridgeTool, useUserTools } from "agui-mcp-bridge/react";

export function App({ bridgeUrl }) {
  const [showCounter, setShowCounter] = useState(true);
  return (
    <BridgeProvider url={bridgeUrl} room="default">
      <Status />
      <UserTools />
      <label>
        <input id="show-counter" type="checkbox" checked={showCounter}
               onChange={(event) => setShowCounter(event.target.checked)} />
        Show the counter
      </label>
      {showCounter && <Counter />}
    </BridgeProvider>
  );
}

function Status() {
  const status = useBridgeStatus();
  const bridge = useBridge();
  // How many tool registrations the bridge confirmed: a new handler must not register a tool again.
  const [registered, setRegistered] = useState(0);
  useEffect(() => {
    if (!bridge) return;
    const count = (event) => setRegistered((n) => n + event.detail.tools.length);
    bridge.addEventListener("registered", count);
    return () => bridge.removeEventListener("registered", count);
  }, [bridge]);
  return (
    <p>
      Bridge: <output id="status">{status}</output>, tools registered: <output id="registered">{registered}</output>
    </p>
  );
}

function UserTools() {
  useUserTools({ pinned: true }); // agui_user_confirm, agui_user_prompt, agui_user_choose
  return null;
}

function Counter() {
  const [count, setCount] = useState(0);
  useBridgeTool({
    name: "add_to_counter",
    description: "Add a number to the counter the page shows.",
    inputSchema: { type: "object", properties: { by: { type: "integer" } }, required: ["by"] },
    handler: ({ by }) => {
      setCount((value) => value + by);
      return `added ${by}`;
    },
  });
  const { mcpName } = useBridgeTool({
    name: "read_counter",
    description: "The counter's value, as the page shows it now.",
    inputSchema: { type: "object", properties: {} },
    handler: async () => ({ count }), // the count of the latest render, not the first
  });
  return (
    <section>
      <p>Counter: <output id="count">{count}</output> <small id="read-counter-name">{mcpName ?? ""}</small></p>
      <button id="increment" type="button" onClick={() => setCount((value) => value + 1)}>+1</button>
    </section>
  );
}
