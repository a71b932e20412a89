// A CopilotKit app: its frontend tools opt in to WebMCP (`webmcp: true`), which agui-mcp-bridge serves
// to MCP agents (tests/test_copilotkit.py).
import { useState } from "react";
import { CopilotKitProvider, useFrontendTool } from "@copilotkit/react-core/v2";
import { z } from "zod";

export function App({ runtimeUrl }) {
  const [showNotes, setShowNotes] = useState(true);
  return (
    <CopilotKitProvider runtimeUrl={runtimeUrl}>
      <p>Bridge: <output id="bridge">connecting</output></p>
      <PageTools />
      <label>
        <input id="show-notes" type="checkbox" checked={showNotes}
               onChange={(event) => setShowNotes(event.target.checked)} />
        Show the notes
      </label>
      {showNotes && <Notes />}
    </CopilotKitProvider>
  );
}

function PageTools() {
  useFrontendTool({
    name: "read_page_title",
    description: "The title of the page the user is on.",
    parameters: z.object({}),
    handler: async () => ({ title: document.title }),
    webmcp: { annotations: { readOnlyHint: true } },
  });
  return null;
}

function Notes() {
  const [notes, setNotes] = useState([]);
  useFrontendTool({
    name: "add_note",
    description: "Add a note to the list the page shows.",
    parameters: z.object({
      text: z.string().describe("The note's text"),
      pinned: z.boolean().describe("Whether the note goes first"),
    }),
    handler: async ({ text, pinned }) => {
      setNotes((current) => (pinned ? [text, ...current] : [...current, text]));
      return `noted: ${text}`;
    },
    webmcp: true,
  });
  return (
    <ul id="notes">
      {notes.map((note, index) => <li key={index}>{note}</li>)}
    </ul>
  );
}
