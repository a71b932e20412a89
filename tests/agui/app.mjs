// An AG-UI app for tests/interaction/test_agui.py: the real @ag-ui/client HttpAgent and web_client/agui-app.js.
//
//   node tests/agui/app.mjs '{"url": "http://127.0.0.1:8765/agui/run", "tools": ["add", "greet"], "label": "A"}'
//
// Serves the named tools until SIGTERM; says what happens as JSON lines on stdout:
// {"event": "registered" | "call" | "interrupt" | "aborted" | "retrying" | "stopped" | "failed", ...}.
import { HttpAgent } from "@ag-ui/client";
import { DECLINE, serveFrontendTools } from "../../web_client/agui-app.js";

const config = JSON.parse(process.argv[2]);
const say = (event, fields = {}) => process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
const stop = new AbortController();
const label = config.label ?? "app";

/** Resolves when `signal` aborts, with its reason. */
const aborted = (signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason)));

const TOOLS = {
  add: {
    description: "Add two numbers.",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    handler: ({ a, b }) => String(a + b),
  },
  greet: {
    description: "Greet someone by name.",
    parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    handler: async ({ name }) => ({ greeting: `Hello, ${name}!`, from: label }),
  },
  whoami: {
    description: "Say which app this is.",
    parameters: { type: "object", properties: {} },
    handler: () => label,
  },
  slow: {
    description: "Answers after a while, when the next run is already waiting.",
    parameters: { type: "object", properties: { ms: { type: "number" } } },
    handler: async ({ ms = 300 }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return `slept ${ms} ms`;
    },
  },
  fail: {
    description: "Always fails.",
    parameters: { type: "object", properties: {} },
    handler: () => { throw new Error("Card declined"); },
  },
  hang: {
    description: "Never answers.",
    parameters: { type: "object", properties: {} },
    handler: async (args, { signal, toolCallId }) => {
      const reason = await aborted(signal);
      say("aborted", { toolCallId, reason: String(reason?.message ?? reason) });
    },
  },
  vanish: {
    description: "The app stops serving its tools when this is called.",
    parameters: { type: "object", properties: {} },
    handler: async (args, { signal }) => {
      say("vanishing");
      stop.abort();
      await aborted(signal);
    },
  },
  confirm: {
    description: "Ask the user to confirm.",
    parameters: { type: "object", properties: { question: { type: "string" }, answer: { type: "string" } },
                  required: ["question"] },
    interrupt: { message: "Please confirm.", responseSchema: { type: "object", properties: { approved: { type: "boolean" } } } },
    handler: async ({ answer }, { interrupt }) => {
      say("interrupt", { interrupt });
      if (answer === "decline") return DECLINE;
      return { approved: answer === "yes" };
    },
  },
};

const tools = config.tools.map((name) => {
  const spec = TOOLS[name];
  return { name, ...spec, handler: async (args, context) => {
    say("call", { tool: name, args, toolCallId: context.toolCallId });
    return spec.handler(args, context);
  } };
});

process.on("SIGTERM", () => stop.abort());
const agent = new HttpAgent({ url: config.url, threadId: config.threadId, headers: config.headers ?? {} });
serveFrontendTools(agent, tools, {
  signal: stop.signal,
  title: config.title,
  retryDelay: 50,
  onRegistered: (registered) => say("registered", { tools: registered }),
  onError: (error) => say("retrying", { message: String(error?.message ?? error) }),
}).then(
  () => say("stopped"),
  (error) => { say("failed", { code: error.code, message: error.message }); process.exitCode = 1; },
);
