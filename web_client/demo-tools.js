/**
 * A generated catalog of realistic business tools (CRM, billing, support, …), used by the demo page's
 * "300 more tools" switch and by examples/many_tools to show the bridge's search mode; and the demo shop's
 * orders (`demoOrders`), the long answer of the demo page's `list_orders` tool (code mode's point: a program
 * reads them all and returns only a total).
 *
 *   import { generateTools, simulate } from "http://127.0.0.1:8765/client/demo-tools.js";
 *   for (const tool of generateTools(300)) bridge.registerTool(tool, (params) => simulate(tool, params), { signal });
 *
 * The tools do nothing real: `simulate()` answers with plausible, clearly marked demo data.
 */

const CUSTOMERS = ["Alice Martin", "Bob Stone", "Chloé Dubois", "David Kim", "Emma Rossi", "Farid Haddad",
  "Grace Chen", "Hugo Silva"];
const PRODUCTS = [["mug-01", "Stoneware mug", 12.5], ["tea-02", "Sencha tea, 100 g", 8.9], ["pot-03", "Cast iron teapot", 46],
  ["bag-04", "Canvas tote bag", 18], ["cup-05", "Espresso cup set", 24.5], ["kit-06", "Pour-over kit", 39]];
const ORDER_STATUSES = ["open", "shipped", "open", "cancelled", "shipped"];

/**
 * The demo shop's orders, newest first, the same on every page: each with its id, customer, status ("open",
 * "shipped" or "cancelled"), placing date, items and total in EUR.
 */
export function demoOrders(count = 40) {
  return Array.from({ length: count }, (_, i) => {
    const items = Array.from({ length: 1 + (i % 3) }, (_, k) => {
      const [sku, name, price] = PRODUCTS[(i * 5 + k * 7) % PRODUCTS.length];
      return { sku, name, quantity: 1 + ((i + k) % 4), unit_price: price };
    });
    const total = Math.round(items.reduce((sum, item) => sum + item.quantity * item.unit_price, 0) * 100) / 100;
    const day = String(28 - (i % 28)).padStart(2, "0");
    return { id: `ord-${1040 - i}`, customer: CUSTOMERS[(i * 3) % CUSTOMERS.length], status: ORDER_STATUSES[i % 5],
      placed: `2026-${i < 28 ? "11" : "10"}-${day}`, currency: "EUR", items, total };
  });
}

const S = (description, extra = {}) => ({ type: "string", description, ...extra });
const N = (description, extra = {}) => ({ type: "number", description, ...extra });
const I = (description, extra = {}) => ({ type: "integer", description, ...extra });
const B = (description) => ({ type: "boolean", description });
const E = (description, values) => ({ type: "string", enum: values, description });
const DATE = (description) => ({ type: "string", format: "date", description });
const EMAIL = (description) => ({ type: "string", format: "email", description });

/** domain -> {label, entities: {entity: {noun, plural, fields, required, actions, extra}}} */
const DOMAINS = {
  crm: {
    label: "CRM",
    entities: {
      contact: { noun: "contact", plural: "contacts", what: "a person your sales team talks to",
        fields: { first_name: S("Given name"), last_name: S("Family name"), email: EMAIL("Email address"),
          phone: S("Phone number in international format"), company_id: S("Company the contact works for") },
        required: ["first_name", "last_name", "email"], actions: ["list", "get", "create", "update", "delete", "search", "merge", "export"] },
      company: { noun: "company account", plural: "company accounts", what: "an organisation you sell to",
        fields: { name: S("Legal name"), domain: S("Web domain, e.g. example.com"), industry: S("Industry"),
          employees: I("Number of employees", { minimum: 1 }) },
        required: ["name"], actions: ["list", "get", "create", "update", "search"] },
      deal: { noun: "deal", plural: "deals", what: "a sales opportunity in the pipeline",
        fields: { title: S("Deal title"), company_id: S("Company account id"), amount: N("Expected value", { minimum: 0 }),
          currency: S("ISO 4217 currency code, e.g. EUR"), stage: E("Pipeline stage", ["lead", "qualified", "proposal", "won", "lost"]),
          close_date: DATE("Expected close date") },
        required: ["title", "company_id"], actions: ["list", "get", "create", "update", "move_stage", "forecast"] },
      lead: { noun: "lead", plural: "leads", what: "a prospect who has not been qualified yet",
        fields: { email: EMAIL("Lead email"), source: E("Where the lead came from", ["web", "event", "referral", "ads"]),
          score: I("Lead score 0-100", { minimum: 0, maximum: 100 }) },
        required: ["email"], actions: ["list", "create", "qualify", "assign"] },
      note: { noun: "CRM note", plural: "CRM notes", what: "a free-text note attached to a contact or deal",
        fields: { record_id: S("Contact, company or deal id"), text: S("Note text") },
        required: ["record_id", "text"], actions: ["list", "create", "delete"] },
    },
  },
  calendar: {
    label: "Calendar",
    entities: {
      event: { noun: "calendar event", plural: "calendar events", what: "a meeting or appointment",
        fields: { title: S("Event title"), start: S("Start, ISO 8601 date-time"), end: S("End, ISO 8601 date-time"),
          attendees: { type: "array", items: { type: "string", format: "email" }, description: "Attendee emails" },
          location: S("Room or video link") },
        required: ["title", "start", "end"], actions: ["list", "get", "create", "update", "delete", "reschedule"] },
      availability: { noun: "free/busy availability", plural: "availability slots", what: "when people are free",
        fields: { people: { type: "array", items: { type: "string" }, description: "Emails of the people" },
          date: DATE("Day to check"), duration_minutes: I("Meeting length in minutes", { minimum: 5 }) },
        required: ["people", "date"], actions: ["find"] },
      meeting_room: { noun: "meeting room", plural: "meeting rooms", what: "a bookable room in an office",
        fields: { office: S("Office name"), capacity: I("Seats needed", { minimum: 1 }), start: S("Start, ISO 8601"),
          end: S("End, ISO 8601") },
        required: ["office"], actions: ["list", "book", "release"] },
      reminder: { noun: "reminder", plural: "reminders", what: "a notification at a given time",
        fields: { text: S("What to remember"), at: S("When, ISO 8601 date-time") },
        required: ["text", "at"], actions: ["list", "create", "delete", "snooze"] },
    },
  },
  email: {
    label: "Email",
    entities: {
      message: { noun: "email message", plural: "email messages", what: "a message in the mailbox",
        fields: { to: { type: "array", items: { type: "string", format: "email" }, description: "Recipients" },
          subject: S("Subject line"), body: S("Plain-text body"), cc: { type: "array", items: { type: "string" }, description: "Copy recipients" } },
        required: ["to", "subject", "body"], actions: ["search", "get", "send", "reply", "forward", "archive", "mark_read"] },
      draft: { noun: "email draft", plural: "email drafts", what: "an unsent message",
        fields: { to: { type: "array", items: { type: "string" }, description: "Recipients" }, subject: S("Subject"),
          body: S("Body") },
        required: ["subject"], actions: ["list", "create", "update", "delete", "send"] },
      label: { noun: "mailbox label", plural: "mailbox labels", what: "a tag used to file messages",
        fields: { name: S("Label name"), color: S("Hex color, e.g. #1a73e8") },
        required: ["name"], actions: ["list", "create", "apply", "remove"] },
      signature: { noun: "email signature", plural: "email signatures", what: "the text appended to outgoing mail",
        fields: { text: S("Signature text"), default: B("Use for new messages") },
        required: ["text"], actions: ["get", "update"] },
    },
  },
  inventory: {
    label: "Inventory",
    entities: {
      product: { noun: "product", plural: "products", what: "an item in the catalog",
        fields: { sku: S("Stock keeping unit"), name: S("Product name"), price: N("Unit price", { minimum: 0 }),
          category: S("Catalog category"), active: B("Whether it can be sold") },
        required: ["sku", "name"], actions: ["list", "get", "create", "update", "delete", "search", "import"] },
      stock_level: { noun: "stock level", plural: "stock levels", what: "how many units are on hand",
        fields: { sku: S("Stock keeping unit"), warehouse_id: S("Warehouse"), quantity: I("Units", { minimum: 0 }) },
        required: ["sku"], actions: ["get", "adjust", "transfer", "forecast"] },
      warehouse: { noun: "warehouse", plural: "warehouses", what: "a place where stock is kept",
        fields: { name: S("Warehouse name"), address: S("Street address"), country: S("ISO country code") },
        required: ["name"], actions: ["list", "get", "create"] },
      supplier: { noun: "supplier", plural: "suppliers", what: "a vendor you buy stock from",
        fields: { name: S("Supplier name"), email: EMAIL("Ordering email"), lead_time_days: I("Days to deliver", { minimum: 0 }) },
        required: ["name"], actions: ["list", "get", "create", "update"] },
      purchase_order: { noun: "purchase order", plural: "purchase orders", what: "an order placed with a supplier",
        fields: { supplier_id: S("Supplier"), lines: { type: "array", description: "Order lines",
          items: { type: "object", properties: { sku: S("SKU"), quantity: I("Units", { minimum: 1 }) }, required: ["sku", "quantity"] } },
          expected_date: DATE("Expected delivery date") },
        required: ["supplier_id", "lines"], actions: ["list", "get", "create", "approve", "receive", "cancel"] },
    },
  },
  billing: {
    label: "Billing",
    entities: {
      invoice: { noun: "invoice", plural: "invoices", what: "a bill sent to a customer",
        fields: { customer_id: S("Customer"), amount: N("Total amount", { minimum: 0 }), currency: S("ISO 4217 code"),
          due_date: DATE("Payment due date"), memo: S("Text printed on the invoice") },
        required: ["customer_id", "amount"], actions: ["list", "get", "create", "send", "void", "mark_paid", "export"] },
      payment: { noun: "payment", plural: "payments", what: "money received from a customer",
        fields: { invoice_id: S("Invoice paid"), amount: N("Amount", { minimum: 0 }), method: E("Payment method", ["card", "bank_transfer", "paypal"]) },
        required: ["invoice_id", "amount"], actions: ["list", "get", "record", "refund"] },
      subscription: { noun: "subscription", plural: "subscriptions", what: "a recurring plan a customer pays for",
        fields: { customer_id: S("Customer"), plan: S("Plan code"), seats: I("Seats", { minimum: 1 }) },
        required: ["customer_id", "plan"], actions: ["list", "get", "create", "upgrade", "pause", "cancel"] },
      coupon: { noun: "discount coupon", plural: "discount coupons", what: "a code that lowers a price",
        fields: { code: S("Coupon code"), percent_off: N("Percent off", { minimum: 0, maximum: 100 }), expires: DATE("Expiry date") },
        required: ["code", "percent_off"], actions: ["list", "create", "delete", "validate"] },
      tax_rate: { noun: "tax rate", plural: "tax rates", what: "a VAT or sales tax percentage",
        fields: { country: S("ISO country code"), region: S("State or region"), rate: N("Percent", { minimum: 0 }) },
        required: ["country"], actions: ["list", "get", "calculate"] },
    },
  },
  support: {
    label: "Support",
    entities: {
      ticket: { noun: "support ticket", plural: "support tickets", what: "a customer's request for help",
        fields: { subject: S("Short summary of the problem"), description: S("What the customer reported"),
          priority: E("Urgency", ["low", "normal", "high", "urgent"]), customer_email: EMAIL("Who reported it"),
          assignee: S("Agent the ticket is assigned to") },
        required: ["subject", "customer_email"], actions: ["list", "get", "create", "update", "assign", "close", "escalate", "search", "merge", "export"] },
      macro: { noun: "reply macro", plural: "reply macros", what: "a canned answer for common questions",
        fields: { title: S("Macro title"), text: S("Reply text with {{placeholders}}") },
        required: ["title", "text"], actions: ["list", "create", "apply"] },
      satisfaction_survey: { noun: "satisfaction survey", plural: "satisfaction surveys", what: "a CSAT rating request after a ticket",
        fields: { ticket_id: S("Ticket"), score: I("Rating 1-5", { minimum: 1, maximum: 5 }) },
        required: ["ticket_id"], actions: ["send", "list", "summarize"] },
      sla_policy: { noun: "SLA policy", plural: "SLA policies", what: "response-time targets per priority",
        fields: { name: S("Policy name"), first_response_hours: N("Hours to first response", { minimum: 0 }) },
        required: ["name"], actions: ["list", "get", "update"] },
    },
  },
  shipping: {
    label: "Shipping",
    entities: {
      shipment: { noun: "shipment", plural: "shipments", what: "a parcel sent to a customer",
        fields: { order_id: S("Order shipped"), carrier: E("Carrier", ["ups", "fedex", "dhl", "usps"]),
          weight_kg: N("Weight in kilograms", { minimum: 0 }), service: E("Speed", ["ground", "express", "overnight"]) },
        required: ["order_id"], actions: ["list", "get", "create", "track", "cancel"] },
      shipping_label: { noun: "shipping label", plural: "shipping labels", what: "a printable carrier label",
        fields: { shipment_id: S("Shipment"), format: E("File format", ["pdf", "zpl", "png"]) },
        required: ["shipment_id"], actions: ["create", "void"] },
      shipping_rate: { noun: "shipping rate", plural: "shipping rates", what: "what a carrier charges for a parcel",
        fields: { from_postcode: S("Origin postcode"), to_postcode: S("Destination postcode"), to_country: S("ISO country code"),
          weight_kg: N("Weight in kilograms", { minimum: 0 }) },
        required: ["to_country", "weight_kg"], actions: ["compare", "quote"] },
      return_request: { noun: "return request", plural: "return requests", what: "a customer sending goods back (RMA)",
        fields: { order_id: S("Order"), reason: E("Reason", ["damaged", "wrong_item", "not_needed", "other"]), items: { type: "array", items: { type: "string" }, description: "SKUs returned" } },
        required: ["order_id", "reason"], actions: ["list", "create", "approve", "reject"] },
    },
  },
  hr: {
    label: "HR",
    entities: {
      employee: { noun: "employee record", plural: "employee records", what: "a person on the payroll",
        fields: { name: S("Full name"), email: EMAIL("Work email"), department: S("Department"), manager_id: S("Manager"),
          start_date: DATE("First day") },
        required: ["name", "email"], actions: ["list", "get", "create", "update", "offboard", "search", "export"] },
      time_off: { noun: "time-off request", plural: "time-off requests", what: "vacation or sick leave",
        fields: { employee_id: S("Employee"), kind: E("Kind of leave", ["vacation", "sick", "parental", "unpaid"]),
          from: DATE("First day off"), to: DATE("Last day off") },
        required: ["employee_id", "from", "to"], actions: ["list", "create", "approve", "deny", "balance"] },
      payroll_run: { noun: "payroll run", plural: "payroll runs", what: "a monthly salary payment batch",
        fields: { period: S("Month, e.g. 2025-03"), dry_run: B("Compute without paying") },
        required: ["period"], actions: ["list", "preview", "start"] },
      job_posting: { noun: "job posting", plural: "job postings", what: "an open position advertised to candidates",
        fields: { title: S("Job title"), team: S("Team"), location: S("City or remote"), salary_range: S("e.g. 60k-75k EUR") },
        required: ["title"], actions: ["list", "create", "publish", "close"] },
      candidate: { noun: "job candidate", plural: "job candidates", what: "an applicant for an open position",
        fields: { name: S("Full name"), email: EMAIL("Email"), posting_id: S("Job posting"), stage: E("Hiring stage", ["applied", "screen", "interview", "offer", "hired", "rejected"]) },
        required: ["name", "email"], actions: ["list", "get", "create", "advance", "reject", "schedule_interview"] },
    },
  },
  analytics: {
    label: "Analytics",
    entities: {
      report: { noun: "report", plural: "reports", what: "a saved query over business data",
        fields: { name: S("Report name"), metric: S("Metric to chart"), group_by: S("Dimension to group by"),
          from: DATE("Start date"), to: DATE("End date") },
        required: ["name"], actions: ["list", "get", "run", "create", "schedule", "export"] },
      metric: { noun: "metric", plural: "metrics", what: "a number tracked over time (revenue, signups, churn…)",
        fields: { name: S("Metric name, e.g. weekly_active_users"), from: DATE("Start date"), to: DATE("End date"),
          granularity: E("Bucket size", ["hour", "day", "week", "month"]) },
        required: ["name"], actions: ["list", "query", "compare", "alert"] },
      funnel: { noun: "conversion funnel", plural: "conversion funnels", what: "the share of users passing each step",
        fields: { steps: { type: "array", items: { type: "string" }, description: "Event names, in order" }, from: DATE("Start"), to: DATE("End") },
        required: ["steps"], actions: ["analyze", "create"] },
      cohort: { noun: "retention cohort", plural: "retention cohorts", what: "users grouped by signup week",
        fields: { signup_from: DATE("First signup day"), signup_to: DATE("Last signup day"), event: S("Returning event") },
        required: ["signup_from"], actions: ["analyze"] },
      dashboard: { noun: "analytics dashboard", plural: "analytics dashboards", what: "a board of charts",
        fields: { name: S("Dashboard name"), charts: { type: "array", items: { type: "string" }, description: "Report ids" } },
        required: ["name"], actions: ["list", "get", "create", "share"] },
    },
  },
  docs: {
    label: "Documents",
    entities: {
      document: { noun: "document", plural: "documents", what: "a text file in the team drive",
        fields: { title: S("Title"), folder_id: S("Folder"), content: S("Markdown content") },
        required: ["title"], actions: ["list", "get", "create", "update", "delete", "search", "translate", "summarize"] },
      folder: { noun: "folder", plural: "folders", what: "a directory in the team drive",
        fields: { name: S("Folder name"), parent_id: S("Parent folder") },
        required: ["name"], actions: ["list", "create", "rename", "delete"] },
      comment: { noun: "document comment", plural: "document comments", what: "a remark anchored in a document",
        fields: { document_id: S("Document"), text: S("Comment"), quote: S("Text the comment refers to") },
        required: ["document_id", "text"], actions: ["list", "create", "resolve"] },
      share_link: { noun: "share link", plural: "share links", what: "a URL giving others access",
        fields: { document_id: S("Document or folder"), role: E("Access", ["viewer", "commenter", "editor"]), expires: DATE("Expiry") },
        required: ["document_id"], actions: ["create", "revoke", "list"] },
    },
  },
  project: {
    label: "Projects",
    entities: {
      issue: { noun: "issue", plural: "issues", what: "a bug or task in the tracker",
        fields: { title: S("Title"), description: S("Details"), kind: E("Kind", ["bug", "task", "story"]),
          assignee: S("Assignee"), labels: { type: "array", items: { type: "string" }, description: "Labels" },
          estimate_points: I("Story points", { minimum: 0 }) },
        required: ["title"], actions: ["list", "get", "create", "update", "assign", "close", "search", "link"] },
      sprint: { noun: "sprint", plural: "sprints", what: "a two-week iteration",
        fields: { name: S("Sprint name"), start: DATE("Start"), end: DATE("End"), goal: S("Sprint goal") },
        required: ["name"], actions: ["list", "create", "start", "complete"] },
      milestone: { noun: "milestone", plural: "milestones", what: "a release target date",
        fields: { title: S("Title"), due: DATE("Due date") },
        required: ["title"], actions: ["list", "create", "update"] },
      time_entry: { noun: "time entry", plural: "time entries", what: "hours logged against an issue",
        fields: { issue_id: S("Issue"), hours: N("Hours", { minimum: 0 }), date: DATE("Day worked"), note: S("What was done") },
        required: ["issue_id", "hours"], actions: ["list", "log", "delete"] },
    },
  },
  finance: {
    label: "Finance",
    entities: {
      exchange_rate: { noun: "currency exchange rate", plural: "currency exchange rates", what: "the price of one currency in another",
        fields: { from: S("ISO 4217 code to convert from, e.g. USD"), to: S("ISO 4217 code to convert to, e.g. EUR"),
          amount: N("Amount to convert", { minimum: 0 }), date: DATE("Rate date (default today)") },
        required: ["from", "to"], actions: ["get", "convert"] },
      expense: { noun: "expense claim", plural: "expense claims", what: "money an employee spent for work",
        fields: { employee_id: S("Employee"), amount: N("Amount", { minimum: 0 }), currency: S("ISO 4217 code"),
          category: E("Category", ["travel", "meals", "equipment", "software", "other"]), receipt_url: S("Receipt image URL") },
        required: ["employee_id", "amount"], actions: ["list", "submit", "approve", "reimburse"] },
      budget: { noun: "budget", plural: "budgets", what: "planned spending per department",
        fields: { department: S("Department"), year: I("Fiscal year"), amount: N("Amount", { minimum: 0 }) },
        required: ["department", "year"], actions: ["get", "update", "compare"] },
      ledger_entry: { noun: "ledger entry", plural: "ledger entries", what: "a double-entry bookkeeping line",
        fields: { account: S("Account code"), debit: N("Debit"), credit: N("Credit"), memo: S("Memo"), date: DATE("Posting date") },
        required: ["account"], actions: ["list", "post", "reverse"] },
    },
  },
  marketing: {
    label: "Marketing",
    entities: {
      campaign: { noun: "marketing campaign", plural: "marketing campaigns", what: "a coordinated promotion across channels",
        fields: { name: S("Campaign name"), channel: E("Channel", ["email", "social", "search", "display"]),
          budget: N("Budget", { minimum: 0 }), start: DATE("Start"), end: DATE("End") },
        required: ["name", "channel"], actions: ["list", "get", "create", "update", "launch", "pause", "report"] },
      audience: { noun: "audience segment", plural: "audience segments", what: "a group of customers matching rules",
        fields: { name: S("Segment name"), rules: S("Filter, e.g. country = 'DE' and orders > 2") },
        required: ["name", "rules"], actions: ["list", "create", "estimate", "sync"] },
      newsletter: { noun: "newsletter", plural: "newsletters", what: "an email sent to subscribers",
        fields: { subject: S("Subject line"), audience_id: S("Audience segment"), html: S("HTML content"), send_at: S("When, ISO 8601") },
        required: ["subject", "audience_id"], actions: ["list", "create", "schedule", "send_test", "unsubscribe"] },
      landing_page: { noun: "landing page", plural: "landing pages", what: "a web page built for one campaign",
        fields: { title: S("Page title"), slug: S("URL path"), campaign_id: S("Campaign") },
        required: ["title", "slug"], actions: ["list", "create", "publish", "ab_test"] },
    },
  },
  orders: {
    label: "Orders",
    entities: {
      order: { noun: "customer order", plural: "customer orders", what: "a purchase made in the web shop",
        fields: { customer_email: EMAIL("Buyer"), items: { type: "array", description: "Ordered items",
          items: { type: "object", properties: { sku: S("SKU"), quantity: I("Units", { minimum: 1 }) }, required: ["sku", "quantity"] } },
          shipping_address: S("Delivery address"), notes: S("Notes from the buyer") },
        required: ["customer_email", "items"], actions: ["list", "get", "create", "update", "cancel", "refund", "search", "fulfill", "export"] },
      cart: { noun: "shopping cart", plural: "shopping carts", what: "items a shopper has not bought yet",
        fields: { cart_id: S("Cart"), sku: S("SKU"), quantity: I("Units", { minimum: 1 }) },
        required: ["cart_id"], actions: ["get", "add_item", "remove_item", "clear", "recover"] },
      review: { noun: "product review", plural: "product reviews", what: "a customer's rating of a product",
        fields: { sku: S("Product"), rating: I("Stars 1-5", { minimum: 1, maximum: 5 }), text: S("Review text") },
        required: ["sku"], actions: ["list", "approve", "reply", "flag"] },
      gift_card: { noun: "gift card", plural: "gift cards", what: "prepaid store credit",
        fields: { amount: N("Value", { minimum: 0 }), currency: S("ISO 4217 code"), recipient_email: EMAIL("Recipient") },
        required: ["amount"], actions: ["create", "check_balance", "disable"] },
    },
  },
  devops: {
    label: "DevOps",
    entities: {
      deployment: { noun: "deployment", plural: "deployments", what: "a release of a service to an environment",
        fields: { service: S("Service name"), version: S("Version or git SHA"), environment: E("Environment", ["staging", "production"]) },
        required: ["service", "version"], actions: ["list", "get", "start", "rollback", "approve"] },
      incident: { noun: "incident", plural: "incidents", what: "an outage or degradation being handled",
        fields: { title: S("What is broken"), severity: E("Severity", ["sev1", "sev2", "sev3"]), commander: S("Incident commander") },
        required: ["title", "severity"], actions: ["list", "get", "declare", "update", "resolve", "postmortem"] },
      alert_rule: { noun: "alert rule", plural: "alert rules", what: "a monitoring condition that pages on-call",
        fields: { name: S("Rule name"), query: S("Metric query"), threshold: N("Threshold"), channel: S("Where to notify") },
        required: ["name", "query"], actions: ["list", "create", "mute", "delete"] },
      log: { noun: "log line", plural: "log lines", what: "application logs",
        fields: { service: S("Service"), query: S("Search expression"), since: S("Start, ISO 8601"), level: E("Minimum level", ["debug", "info", "warn", "error"]) },
        required: ["service"], actions: ["query", "tail"] },
      on_call: { noun: "on-call schedule", plural: "on-call schedules", what: "who answers pages when",
        fields: { team: S("Team"), date: DATE("Day") },
        required: ["team"], actions: ["get", "override", "page"] },
    },
  },
  travel: {
    label: "Travel",
    entities: {
      flight: { noun: "flight", plural: "flights", what: "an airline connection",
        fields: { from: S("Origin airport IATA code"), to: S("Destination airport IATA code"), date: DATE("Departure day"),
          passengers: I("Passengers", { minimum: 1 }), cabin: E("Cabin", ["economy", "premium", "business"]) },
        required: ["from", "to", "date"], actions: ["search", "book", "cancel", "check_in"] },
      hotel: { noun: "hotel stay", plural: "hotel stays", what: "a room booking",
        fields: { city: S("City"), check_in: DATE("Arrival"), check_out: DATE("Departure"), guests: I("Guests", { minimum: 1 }) },
        required: ["city", "check_in", "check_out"], actions: ["search", "book", "cancel"] },
      trip: { noun: "business trip", plural: "business trips", what: "a planned journey with its bookings and approval",
        fields: { traveler_id: S("Employee"), purpose: S("Why"), from: DATE("Start"), to: DATE("End") },
        required: ["traveler_id", "purpose"], actions: ["list", "create", "approve", "itinerary"] },
      car_rental: { noun: "rental car", plural: "rental cars", what: "a car hired at a destination",
        fields: { city: S("Pick-up city"), from: DATE("Pick-up day"), to: DATE("Return day"), category: E("Car size", ["small", "medium", "large", "van"]) },
        required: ["city", "from", "to"], actions: ["search", "book"] },
    },
  },
};

const VERBS = {
  list: (e) => [`List ${e.plural}`, `Returns ${e.plural} (${e.what}), newest first, optionally filtered.`],
  get: (e) => [`Get a ${e.noun}`, `Fetch one ${e.noun} (${e.what}) by its id, with all its fields.`],
  create: (e) => [`Create a ${e.noun}`, `Create a new ${e.noun} (${e.what}).`],
  update: (e) => [`Update a ${e.noun}`, `Change fields of an existing ${e.noun}; fields left out stay as they are.`],
  delete: (e) => [`Delete a ${e.noun}`, `Permanently delete a ${e.noun}. Cannot be undone.`],
  search: (e) => [`Search ${e.plural}`, `Full-text search over ${e.plural} (${e.what}) by keywords.`],
  export: (e) => [`Export ${e.plural}`, `Export ${e.plural} for a date range as a CSV, XLSX or PDF file and return its download link.`],
};

function humanize(action) {
  return action.replace(/_/g, " ");
}

function schemaFor(action, entity) {
  const id = { id: S(`The ${entity.noun}'s id`) };
  switch (action) {
    case "list":
      return { type: "object", properties: { limit: I("Most results to return", { minimum: 1, maximum: 100, default: 20 }),
        cursor: S("Continue after this cursor"), updated_since: DATE("Only those changed since this day") } };
    case "get":
    case "delete":
      return { type: "object", properties: id, required: ["id"] };
    case "create":
      return { type: "object", properties: entity.fields, required: entity.required };
    case "update":
      return { type: "object", properties: { ...id, ...entity.fields }, required: ["id"] };
    case "search":
      return { type: "object", properties: { query: S("Keywords"), limit: I("Most results", { minimum: 1, maximum: 50 }) },
        required: ["query"] };
    case "export":
      return { type: "object", properties: { format: E("File format", ["csv", "xlsx", "pdf"]), from: DATE("First day"),
        to: DATE("Last day") }, required: ["format"] };
    default: {
      // Domain verbs (approve, track, convert…) act on one record, with the entity's fields as options.
      const needsId = !["find", "compare", "quote", "calculate", "analyze", "convert", "query", "log", "record",
        "submit", "post", "import", "book", "forecast", "declare", "estimate", "tail", "check_balance",
        "itinerary", "page", "report", "send_test", "add_item", "remove_item", "clear", "recover"].includes(action);
      const properties = needsId ? { ...id } : {};
      for (const [key, value] of Object.entries(entity.fields)) properties[key] = value;
      const required = needsId ? ["id"] : entity.required.filter((r) => r in properties);
      return { type: "object", properties, ...(required.length ? { required } : {}) };
    }
  }
}

function describeAction(domain, action, entity) {
  const verb = VERBS[action];
  if (verb) return verb(entity);
  const words = humanize(action);
  const article = /^[aeiou]/i.test(entity.noun) ? "an" : "a";
  const phrase = `${words} ${article} ${entity.noun}`;
  return [`${phrase[0].toUpperCase()}${phrase.slice(1)}`,
    `${phrase[0].toUpperCase()}${phrase.slice(1)} (${entity.what}).`];
}

/** All generated tools (about 320), deterministic; `generateTools(n)` takes the first n, interleaving domains. */
export function generateTools(count = 300, { prefix = "" } = {}) {
  const perDomain = Object.entries(DOMAINS).map(([key, domain]) => {
    const tools = [];
    for (const [entityKey, entity] of Object.entries(domain.entities)) {
      for (const action of entity.actions) {
        const [title, description] = describeAction(domain, action, entity);
        const readOnly = ["list", "get", "search", "find", "query", "analyze", "compare", "quote", "calculate",
          "track", "forecast", "preview", "balance", "validate", "summarize", "convert"].includes(action);
        tools.push({
          name: `${prefix}${key}_${action}_${entityKey}`,
          title: `${domain.label}: ${title}`,
          description: `${description} (${domain.label})`,
          inputSchema: schemaFor(action, entity),
          annotations: { readOnlyHint: readOnly, destructiveHint: ["delete", "void", "cancel", "offboard", "reverse"].includes(action),
            openWorldHint: false },
        });
      }
    }
    return tools;
  });
  const all = [];
  for (let i = 0; all.length < count && perDomain.some((tools) => i < tools.length); i++) {
    for (const tools of perDomain) if (i < tools.length && all.length < count) all.push(tools[i]);
  }
  return all;
}

/** How many tools `generateTools()` can make at most. */
export const TOOL_COUNT = generateTools(10_000).length;

let serial = 1000;

/** A plausible, clearly simulated answer for a generated tool. */
export function simulate(tool, params = {}) {
  const verb = tool.name.split("_")[1];
  const entity = tool.name.split("_").slice(2).join("_");
  const base = { tool: tool.name, simulated: true };
  if (verb === "list" || verb === "search") {
    const n = Math.min(params.limit ?? 3, 3);
    return { ...base, items: Array.from({ length: n }, (_, i) => ({ id: `${entity}_${101 + i}` })), total: n };
  }
  if (verb === "get") return { ...base, id: params.id, status: "active" };
  if (verb === "create") return { ...base, id: `${entity}_${serial++}`, created: true, fields: params };
  if (verb === "convert" && typeof params.amount === "number") {
    const rate = 0.92;
    return { ...base, from: params.from, to: params.to, rate, amount: params.amount,
      converted: Math.round(params.amount * rate * 100) / 100 };
  }
  return { ...base, ok: true, arguments: params };
}
