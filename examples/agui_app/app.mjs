// An AG-UI app — a small shop's order desk — whose frontend tools MCP agents call through agui-mcp-bridge.
//
//   npm install --prefix examples/agui_app
//   node examples/agui_app/app.mjs [--bridge http://127.0.0.1:8765] [--room default] [--answer yes|no]
//
// It is an ordinary @ag-ui/client app: an HttpAgent whose runs go to the bridge's /agui/run, and
// serveFrontendTools() (web_client/agui-app.js, no build step) running its tools. `place_order` needs the
// user: it is marked `interrupt`, so the bridge ends the run with an AG-UI interrupt and the app asks on the
// terminal (or answers --answer for you). Ctrl-C stops it; its tools leave the bridge.
import { HttpAgent } from "@ag-ui/client";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { DECLINE, serveFrontendTools } from "../../web_client/agui-app.js";

const { values: args } = parseArgs({ options: {
  bridge: { type: "string", default: process.env.AGUI_BRIDGE_URL ?? "http://127.0.0.1:8765" },
  room: { type: "string", default: "default" },
  answer: { type: "string" },  // yes | no: answer place_order without asking
} });
const base = args.bridge.replace(/\/$/, "");
const url = args.room === "default" ? `${base}/agui/run` : `${base}/rooms/${args.room}/agui/run`;
const log = (...parts) => console.log(...parts);

const PRODUCTS = { tea: 4.5, coffee: 7.9, mug: 12.0 };
const cart = new Map();
const total = () => [...cart].reduce((sum, [product, quantity]) => sum + PRODUCTS[product] * quantity, 0);
const cartText = () => JSON.stringify({ items: Object.fromEntries(cart), total: Number(total().toFixed(2)) });

async function askTheUser(question) {
  if (args.answer) {
    log(`${question} -> ${args.answer} (--answer)`);
    return args.answer === "yes";
  }
  const terminal = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await terminal.question(`${question} [y/N] `)).trim());
  } finally {
    terminal.close();
  }
}

const tools = [
  {
    name: "list_products",
    description: "List the products of the shop with their prices in euros.",
    parameters: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
    handler: () => JSON.stringify(PRODUCTS),
  },
  {
    name: "add_to_cart",
    description: "Add a product to the user's cart.",
    parameters: { type: "object", properties: {
      product: { type: "string", enum: Object.keys(PRODUCTS) },
      quantity: { type: "integer", minimum: 1 },
    }, required: ["product", "quantity"] },
    handler: ({ product, quantity }) => {
      cart.set(product, (cart.get(product) ?? 0) + quantity);
      log(`cart: +${quantity} ${product}`);
      return cartText();
    },
  },
  {
    name: "view_cart",
    description: "The items in the user's cart and the total in euros.",
    parameters: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
    handler: () => cartText(),
  },
  {
    name: "place_order",
    description: "Place the order of the cart. The user confirms it first; they may decline.",
    parameters: { type: "object", properties: { note: { type: "string" } } },
    interrupt: { message: "Place this order?",
                 responseSchema: { type: "object", properties: { approved: { type: "boolean" } } } },
    handler: async (params, { signal }) => {
      if (cart.size === 0) throw new Error("The cart is empty.");
      const approved = await askTheUser(`Place the order of ${cartText()}?`);
      if (signal.aborted) return undefined;
      if (!approved) return DECLINE;
      const order = { order: `A-${1000 + Math.floor(Math.random() * 9000)}`, total: Number(total().toFixed(2)) };
      cart.clear();
      log(`order placed: ${order.order}`);
      return { approved: true, ...order };
    },
  },
];

const stop = new AbortController();
process.on("SIGINT", () => stop.abort());
process.on("SIGTERM", () => stop.abort());
const agent = new HttpAgent({ url });
log(`Serving ${tools.length} tools to MCP agents through ${url}`);
try {
  await serveFrontendTools(agent, tools, {
    signal: stop.signal,
    title: "Order desk",
    onRegistered: (registered) => log(`registered: ${registered.map((t) => t.name).join(", ")}`),
    onError: (error) => log(`the bridge is unreachable (${error?.message ?? error}); retrying`),
  });
  log("stopped");
} catch (error) {
  log(`the bridge refused this app: ${error.code}: ${error.message}`);
  process.exitCode = 1;
}
