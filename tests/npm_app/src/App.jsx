// A React app whose components register tools with agui-mcp-bridge's hooks (tests/test_npm_package.py).
import { useEffect, useState } from "react";
import { BridgeProvider, useBridge, useBridgeStatus, useBridgeTool, useUserTools } from "agui-mcp-bridge/react";

export function App({ bridgeUrl, withForm = false }) {
  const [showCounter, setShowCounter] = useState(true);
  const [servesForms, setServesForms] = useState(true);
  return (
    <BridgeProvider url={bridgeUrl} room="default" forms={servesForms}>
      <Status />
      <UserTools />
      <label>
        <input id="show-counter" type="checkbox" checked={showCounter}
               onChange={(event) => setShowCounter(event.target.checked)} />
        Show the counter
      </label>
      {showCounter && <Counter />}
      {withForm && <Notes served={servesForms} onServedChange={setServesForms} />}
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

// A <form toolname> the provider serves as a tool (add_note), while its `forms` prop is not false.
function Notes({ served, onServedChange }) {
  const [notes, setNotes] = useState([]);
  const submit = (event) => {
    event.preventDefault();
    const text = new FormData(event.currentTarget).get("text");
    setNotes((list) => [...list, text]);
    // An agent's submission (forms.js): the call's result.
    if (event.nativeEvent.agentInvoked) event.nativeEvent.respondWith(`noted ${text}`);
  };
  return (
    <section>
      <label>
        <input id="serve-forms" type="checkbox" checked={served} onChange={(e) => onServedChange(e.target.checked)} />
        Serve the page's forms to agents
      </label>
      <form toolname="add_note" tooldescription="Add a note to the list the page shows." toolautosubmit=""
            onSubmit={submit}>
        <label>Note <input name="text" required /></label>
        <button type="submit">Add</button>
      </form>
      <ul id="notes">{notes.map((note, index) => <li key={index}>{note}</li>)}</ul>
    </section>
  );
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
