// The Tackle web chat: sessions (each at its own URL, /s/<id>), a turn streamed as server-sent
// events, tool cards, approvals showing what a call will do, usage per turn. Everything from the
// model or a tool is put in the page as text or through the markdown renderer, which builds
// DOM nodes and never parses HTML.
"use strict";
const $ = (id) => document.getElementById(id);
// Where the server mounted Tackle ("" at the root, "/agent" when an app nests it there).
const BASE = (document.querySelector('meta[name="tackle-base"]') || {}).content || "";
const state = { session: null, busy: false, cards: new Map(), answer: null, waiting: null, sessions: [] };
const LONG_LINES = 12, LONG_CHARS = 1500;

function headers(json) {
  const h = {};
  const token = localStorage.getItem("tackle.token");
  if (token) h["Authorization"] = "Bearer " + token;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

async function api(method, path, body) {
  const res = await fetch(BASE + path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 401) { $("auth").style.display = "block"; openPanel("sessions"); throw new Error("a bearer token is needed"); }
  if (!res.ok) { const e = await res.json().catch(() => ({})); throw new Error(e.error ? e.error.message : res.statusText); }
  return res.status === 204 ? null : res.json();
}

function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function nearBottom() { const l = $("log"); return l.scrollHeight - l.scrollTop - l.clientHeight < 80; }
function scrollDown(force) { const l = $("log"); if (force || nearBottom()) l.scrollTop = l.scrollHeight; }
function log(node) { const stick = nearBottom(); $("log").appendChild(node); scrollDown(stick); return node; }
function note(text, cls) { return log(el("p", "note " + (cls || ""), text)); }
function fmt(n) { return Number(n || 0).toLocaleString("en-US"); }

// ---- panels (narrow screens) ----
function openPanel(which) {
  document.body.classList.toggle("show-sessions", which === "sessions" && !document.body.classList.contains("show-sessions"));
  document.body.classList.toggle("show-tools", which === "tools" && !document.body.classList.contains("show-tools"));
}
function closePanels() { document.body.classList.remove("show-sessions", "show-tools"); }

// ---- sessions ----
async function loadSessions() {
  const { sessions } = await api("GET", "/v1/sessions");
  state.sessions = sessions;
  const list = $("sessions"); list.textContent = "";
  for (const s of sessions) {
    const row = el("div", "session" + (state.session === s.id ? " active" : ""));
    row.dataset.id = s.id;
    const link = el("a"); link.href = BASE + "/s/" + encodeURIComponent(s.id);
    link.appendChild(el("span", "", s.title || "(untitled)"));
    link.appendChild(el("small", "", s.model + " · " + (s.messageCount || 0) + " messages"));
    link.onclick = (ev) => { ev.preventDefault(); go(s.id); };
    const rename = el("button", "rename", "✎"); rename.title = "Rename"; rename.setAttribute("aria-label", "Rename session");
    rename.onclick = () => startRename(row, s);
    const del = el("button", "delete", "✕"); del.title = "Delete"; del.setAttribute("aria-label", "Delete session");
    del.onclick = () => deleteSession(s);
    row.append(link, rename, del);
    list.appendChild(row);
  }
  showTitle();
}

function showTitle() {
  const s = state.sessions.find((x) => x.id === state.session);
  $("title").textContent = s ? (s.title || "(untitled)") : "";
  $("model").textContent = s ? s.model : "";
  document.title = s && s.title ? s.title + " · Tackle" : "Tackle";
}

function startRename(row, s) {
  const input = el("input"); input.value = s.title || ""; input.setAttribute("aria-label", "New title");
  row.textContent = ""; row.appendChild(input); input.focus(); input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return; done = true;
    try { if (save && input.value.trim() && input.value.trim() !== s.title) await api("PATCH", "/v1/sessions/" + s.id, { title: input.value.trim() }); }
    catch (e) { note("rename failed: " + (e.message || e), "err"); }
    await loadSessions();
  };
  input.onkeydown = (ev) => { if (ev.key === "Enter") finish(true); if (ev.key === "Escape") finish(false); };
  input.onblur = () => finish(true);
}

async function deleteSession(s) {
  if (!confirm("Delete “" + (s.title || "(untitled)") + "” and everything stored with it?")) return;
  try {
    await api("DELETE", "/v1/sessions/" + s.id);
    if (state.session === s.id) go(null);
    else await loadSessions();
  } catch (e) { note("delete failed: " + (e.message || e), "err"); }
}

function sessionFromUrl() {
  const m = /^\/s\/([^/]+)$/.exec(location.pathname.slice(BASE.length));
  return m ? decodeURIComponent(m[1]) : null;
}

async function go(id, replace) {
  const path = id ? BASE + "/s/" + encodeURIComponent(id) : BASE || "/";
  if (location.pathname !== path) (replace ? history.replaceState : history.pushState).call(history, null, "", path);
  closePanels();
  await show(id);
}

async function show(id) {
  state.session = id; state.cards.clear(); state.answer = null; stopWaiting();
  $("log").textContent = "";
  if (!id) { note("Choose a session or start a new one."); await loadSessions(); return; }
  try {
    const s = await api("GET", "/v1/sessions/" + encodeURIComponent(id));
    $("mode").value = s.mode || "default";
    renderHistory(s.messages || []);
    for (const a of (await api("GET", "/v1/sessions/" + encodeURIComponent(id) + "/approvals")).approvals) approvalButtons(a.callId, a.id, a.tool, a.args);
    for (const q of (await api("GET", "/v1/sessions/" + encodeURIComponent(id) + "/elicitations")).elicitations) questionForm(q);
    family(await api("GET", "/v1/sessions/" + encodeURIComponent(id) + "/children"));
  } catch (e) { note(String(e.message || e), "err"); }
  await loadSessions();
  scrollDown(true);
}

/** Links to the session that started this one (a sub-agent's) and to the sessions it started. */
function family(f) {
  const link = (id, text) => {
    const a = el("a", "", text); a.href = BASE + "/s/" + encodeURIComponent(id);
    a.onclick = (e) => { e.preventDefault(); go(id); };
    return a;
  };
  if (f.parent) {
    const p = el("p", "note subagent", "Sub-agent of ");
    p.appendChild(link(f.parent.sessionId, "session " + f.parent.sessionId.slice(0, 8)));
    p.appendChild(document.createTextNode(" (call " + f.parent.callId + ")"));
    $("log").prepend(p);
  }
  for (const c of f.children || []) {
    const p = el("p", "note subagent", "Sub-agent session: ");
    p.appendChild(link(c.id, c.title || c.id));
    p.appendChild(document.createTextNode(" · " + c.status + " · call " + c.callId));
    log(p);
  }
}

// ---- messages ----
function assistantBlock(text) {
  const div = el("div", "msg assistant");
  div.appendChild(TackleMarkdown.render(text, document));
  return div;
}

/** The envelope of a failed call, as stored in history (JSON), or plain text. */
function envelope(content) {
  try { const e = JSON.parse(content); if (e && typeof e === "object" && e.message) return e; } catch (_) { /* plain text */ }
  return { message: content };
}

function renderHistory(messages) {
  for (const m of messages) {
    for (const b of m.content) {
      if (b.type === "text" && m.role === "user" && b.text.startsWith("[tackle]")) continue;
      if (b.type === "text" && m.role === "user") log(el("div", "msg user", b.text));
      else if (b.type === "text") log(assistantBlock(b.text));
      if (b.type === "tool_use") toolCard(b.id, b.name, b.input && b.input.kind === "json" ? b.input.value : (b.input && b.input.raw));
      if (b.type === "tool_result") {
        if (b.is_error) { const e = envelope(b.content); finishCard(b.tool_use_id, "error", e, null); }
        else finishCard(b.tool_use_id, "ok", b.content, null);
      }
    }
  }
}

// ---- tool cards ----
function summary(name, args) {
  if (!args || typeof args !== "object") return "";
  for (const k of ["command", "path", "url", "pattern", "query", "locator", "action"]) if (typeof args[k] === "string") return args[k].split("\n")[0];
  return "";
}

function preBlock(cls, text) {
  const pre = el("pre", cls, text);
  const lines = text.split("\n").length;
  if (lines <= LONG_LINES && text.length <= LONG_CHARS) return pre;
  // Long: the first lines, the rest behind a toggle.
  const head = text.split("\n").slice(0, LONG_LINES).join("\n");
  const wrap = el("div", cls);
  const short = el("pre", "", head + "\n…");
  const more = el("details", "more");
  more.appendChild(el("summary", "", "Show all " + lines + " lines"));
  more.addEventListener("toggle", () => { short.hidden = more.open; });
  more.appendChild(el("pre", "", text));
  wrap.append(short, more);
  return wrap;
}

function toolCard(id, name, args) {
  const card = el("div", "tool"); card.dataset.call = id;
  const head = el("div", "head");
  head.appendChild(el("span", "name", name));
  head.appendChild(el("span", "summary", summary(name, args)));
  const status = el("span", "status", "running"); head.appendChild(status);
  card.appendChild(head);
  const details = el("details", "args");
  details.appendChild(el("summary", "", "arguments"));
  details.appendChild(el("pre", "json", typeof args === "string" ? args : JSON.stringify(args, null, 2)));
  card.appendChild(details);
  const plan = el("div", "plan"); plan.hidden = true; card.appendChild(plan);
  const out = el("div", "out"); out.hidden = true; card.appendChild(out);
  const actions = el("div", "actions"); actions.hidden = true; card.appendChild(actions);
  state.cards.set(id, { card, status, out, actions, plan, name, args });
  return log(card);
}

function finishCard(id, status, result, locator) {
  const c = state.cards.get(id); if (!c) return;
  c.status.textContent = status; c.status.className = "status " + status;
  c.plan.hidden = true;
  c.out.hidden = false; c.out.textContent = "";
  c.out.className = "out" + (status === "error" ? " error" : "");
  if (status === "error") {
    const e = typeof result === "string" ? { message: result } : result;
    c.out.appendChild(el("pre", "", (e.category ? e.category + ": " : "") + e.message + (e.hint ? "\nhint: " + e.hint : "")));
  } else {
    c.out.appendChild(preBlock("", result));
  }
  c.actions.textContent = ""; c.actions.hidden = !locator;
  if (locator) {
    const b = el("button", "", "Full output");
    b.onclick = async () => {
      const page = await api("GET", "/v1/sessions/" + state.session + "/results/" + encodeURIComponent(locator) + "?limit=2000");
      $("fulltext").textContent = page.text; $("full").showModal();
    };
    c.actions.appendChild(b);
  }
}

/** Lines of a unified-style view of `old` → `new` (whole-block, no alignment needed here). */
function diffLines(oldText, newText) {
  const out = [];
  if (oldText) for (const l of oldText.split("\n")) out.push(["del", "-" + l]);
  for (const l of newText.split("\n")) out.push(["add", "+" + l]);
  return out;
}

/** What an approval is asked for: the command, the edit, or the content to be written. */
function planFor(name, args) {
  const wrap = document.createDocumentFragment();
  if (!args || typeof args !== "object") return wrap;
  if (name === "propose_plan" && typeof args.plan === "string") {
    wrap.appendChild(el("div", "", "plan to approve (approving switches the session to default mode and carries it out):"));
    const div = el("div", "msg assistant plan");
    div.appendChild(TackleMarkdown.render(args.plan, document));
    wrap.appendChild(div);
  } else if (typeof args.command === "string") {
    wrap.appendChild(el("div", "", "will run:"));
    wrap.appendChild(el("pre", "", "$ " + args.command));
  } else if (typeof args.old_string === "string" && typeof args.new_string === "string") {
    wrap.appendChild(el("div", "", "will edit " + (args.path || "") + (args.replace_all ? " (every occurrence)" : "") + ":"));
    const pre = el("pre", "diff");
    for (const [cls, line] of diffLines(args.old_string, args.new_string)) pre.appendChild(el("span", cls, line));
    wrap.appendChild(pre);
  } else if (typeof args.content === "string") {
    wrap.appendChild(el("div", "", "will write " + (args.path || "") + " (" + args.content.length + " characters):"));
    const pre = el("pre", "diff");
    for (const [cls, line] of diffLines("", args.content.replace(/\n$/, ""))) pre.appendChild(el("span", cls, line));
    wrap.appendChild(pre);
  } else {
    wrap.appendChild(el("div", "", "will be called with:"));
    wrap.appendChild(el("pre", "", JSON.stringify(args, null, 2)));
  }
  return wrap;
}

function approvalButtons(callId, approvalId, tool, args) {
  const c = state.cards.get(callId); if (!c) return;
  stopWaiting();
  c.status.textContent = "waiting for approval"; c.status.className = "status waiting";
  c.plan.textContent = ""; c.plan.appendChild(planFor(tool || c.name, args || c.args)); c.plan.hidden = false;
  c.actions.hidden = false; c.actions.textContent = "";
  const isPlan = (tool || c.name) === "propose_plan";
  const reason = el("input"); reason.placeholder = isPlan ? "what to change (for a refinement)" : "reason (optional, for a denial)"; reason.setAttribute("aria-label", "Reason");
  for (const [label, approve] of isPlan ? [["Approve plan", true], ["Refine", false]] : [["Approve", true], ["Deny", false]]) {
    const b = el("button", approve ? "approve" : "deny", label);
    b.onclick = async () => {
      for (const x of c.actions.querySelectorAll("button, input")) x.disabled = true;
      const body = { approve };
      if (!approve && reason.value.trim()) body.reason = reason.value.trim();
      try { await api("POST", "/v1/approvals/" + approvalId, body); startWaiting(); }
      catch (e) { note(String(e.message || e), "err"); }
    };
    c.actions.appendChild(b);
  }
  c.actions.appendChild(reason);
  scrollDown(true);
}

// ---- questions MCP servers ask (elicitation) ----
/** The input for one form field: text (with the format's input type), a number, a checkbox, a
 *  choice, or checkboxes for a list of choices. Values are set as properties, never as HTML. */
function fieldInput(name, f) {
  const choices = (f.enum || []).map((v, i) => [v, (f.enumNames || [])[i] || String(v)])
    .concat((f.oneOf || f.anyOf || []).filter((o) => "const" in o).map((o) => [o.const, o.title || String(o.const)]));
  if (f.type === "array") {
    const items = f.items || {};
    const opts = (items.enum || []).map((v) => [v, String(v)]).concat((items.anyOf || items.oneOf || []).filter((o) => "const" in o).map((o) => [o.const, o.title || String(o.const)]));
    const box = el("span", "choices"); box.dataset.kind = "multi";
    for (const [v, label] of opts) {
      const l = el("label"); const c = el("input"); c.type = "checkbox"; c.value = JSON.stringify(v);
      c.checked = Array.isArray(f.default) && f.default.includes(v);
      l.append(c, document.createTextNode(" " + label)); box.appendChild(l);
    }
    return box;
  }
  if (choices.length) {
    const s = el("select"); s.dataset.kind = "choice";
    if (!("default" in f)) s.appendChild(el("option", "", "—")).value = "";
    for (const [v, label] of choices) { const o = el("option", "", label); o.value = JSON.stringify(v); if (f.default === v) o.selected = true; s.appendChild(o); }
    return s;
  }
  const i = el("input");
  if (f.type === "boolean") { i.type = "checkbox"; i.checked = f.default === true; i.dataset.kind = "bool"; return i; }
  if (f.type === "number" || f.type === "integer") {
    i.type = "number"; i.step = f.type === "integer" ? "1" : "any"; i.dataset.kind = f.type;
    if (typeof f.minimum === "number") i.min = f.minimum; if (typeof f.maximum === "number") i.max = f.maximum;
  } else {
    i.type = ({ email: "email", uri: "url", date: "date", "date-time": "datetime-local" })[f.format] || "text"; i.dataset.kind = "string";
  }
  if ("default" in f) i.value = String(f.default);
  return i;
}

/** The form's answer: the fields given (empty ones left out, so the server's defaults apply). */
function formContent(form) {
  const content = {};
  for (const row of form.querySelectorAll("[data-field]")) {
    const name = row.dataset.field, input = row.querySelector("input, select, .choices");
    const kind = input.dataset.kind;
    if (kind === "bool") content[name] = input.checked;
    else if (kind === "multi") { const v = [...input.querySelectorAll("input:checked")].map((c) => JSON.parse(c.value)); if (v.length) content[name] = v; }
    else if (kind === "choice") { if (input.value) content[name] = JSON.parse(input.value); }
    else if (input.value !== "") content[name] = kind === "integer" ? parseInt(input.value, 10) : kind === "number" ? Number(input.value) : input.value;
  }
  return content;
}

/** A question of an MCP server: a form, or a page to open, answered through
 *  POST /v1/elicitations/{id}; in the asking call's card when it is on the page. */
function questionForm(q) {
  const id = q.elicitation_id || q.id, callId = q.call_id || q.callId;
  if (document.querySelector('.question[data-question="' + CSS.escape(id) + '"]')) return;
  stopWaiting();
  const box = el("form", "question"); box.dataset.question = id;
  box.appendChild(el("div", "asks", (q.server || "a server") + " asks: " + q.message));
  const fields = el("div", "fields");
  if (q.mode === "url") {
    let safe = null; try { const u = new URL(q.url); if (u.protocol === "https:" || u.protocol === "http:") safe = u.href; } catch (_) { /* not a URL */ }
    const a = el("a", "", safe || String(q.url)); if (safe) { a.href = safe; a.target = "_blank"; a.rel = "noopener noreferrer"; }
    fields.appendChild(a);
  } else {
    const schema = q.schema || {}, required = schema.required || [];
    for (const [name, f] of Object.entries(schema.properties || {})) {
      const row = el("label", "field"); row.dataset.field = name;
      row.appendChild(el("span", "label", (f.title || name) + (required.includes(name) ? " *" : "")));
      row.appendChild(fieldInput(name, f));
      if (f.description) row.appendChild(el("small", "", f.description));
      fields.appendChild(row);
    }
  }
  box.appendChild(fields);
  const problem = el("div", "problem"); problem.hidden = true; box.appendChild(problem);
  const actions = el("div", "actions");
  const answer = async (action) => {
    problem.hidden = true;
    for (const x of box.querySelectorAll("button, input, select")) x.disabled = true;
    const body = { action };
    if (action === "accept" && q.mode !== "url") body.content = formContent(box);
    try { await api("POST", "/v1/elicitations/" + encodeURIComponent(id), body); box.classList.add("answered"); startWaiting(); }
    catch (e) {
      problem.textContent = String(e.message || e); problem.hidden = false;
      for (const x of box.querySelectorAll("button, input, select")) x.disabled = false;
    }
  };
  for (const [label, action, cls] of [[q.mode === "url" ? "Done" : "Send", "accept", "approve"], ["Decline", "decline", "deny"], ["Cancel", "cancel", ""]]) {
    const b = el("button", cls, label); b.type = action === "accept" ? "submit" : "button";
    if (action !== "accept") b.onclick = () => answer(action);
    actions.appendChild(b);
  }
  box.onsubmit = (ev) => { ev.preventDefault(); answer("accept"); };
  box.appendChild(actions);
  const c = state.cards.get(callId);
  if (c) { c.status.textContent = "waiting for an answer"; c.status.className = "status waiting"; c.card.appendChild(box); scrollDown(true); }
  else log(box);
}

function closeQuestion(id, action) {
  const box = document.querySelector('.question[data-question="' + CSS.escape(id) + '"]'); if (!box) return;
  for (const x of box.querySelectorAll("button, input, select")) x.disabled = true;
  box.classList.add("answered"); box.dataset.action = action || "";
}

// ---- waiting indicator ----
function startWaiting(label) {
  stopWaiting();
  const w = el("div", "waiting");
  const dots = el("span", "dots"); dots.append(el("i"), el("i"), el("i"));
  const text = el("span", "", label || "Thinking…");
  w.append(dots, text);
  const since = Date.now();
  state.waiting = { node: log(w), timer: setInterval(() => { text.textContent = (label || "Thinking…") + " " + Math.floor((Date.now() - since) / 1000) + "s"; }, 1000) };
}
function stopWaiting() {
  if (!state.waiting) return;
  clearInterval(state.waiting.timer); state.waiting.node.remove(); state.waiting = null;
}

// ---- a turn ----
// An answer renders once per frame while it streams; when it ends (a tool call, a new step, the
// turn's end) it renders at once, so its text shows even if no frame came (a busy or hidden tab).
function appendAnswer(text) {
  if (!state.answer) { const div = el("div", "msg assistant"); state.answer = { div, text: "", frame: null }; log(div); }
  const answer = state.answer;
  answer.text += text;
  if (answer.frame) return;
  const stick = nearBottom();
  answer.frame = requestAnimationFrame(() => {
    answer.frame = null;
    answer.div.replaceChildren(TackleMarkdown.render(answer.text, document));
    scrollDown(stick);
  });
}
function endAnswer() {
  const answer = state.answer;
  state.answer = null;
  if (!answer) return;
  if (answer.frame) { cancelAnimationFrame(answer.frame); answer.frame = null; }
  answer.div.replaceChildren(TackleMarkdown.render(answer.text, document));
}

function usageLine(e) {
  const u = e.usage || {};
  const parts = ["done", e.steps + " step" + (e.steps === 1 ? "" : "s")];
  if (u.input_tokens || u.output_tokens) {
    const cached = u.input_tokens ? Math.round(100 * (u.cache_read_tokens || 0) / u.input_tokens) : 0;
    parts.push(fmt(u.input_tokens) + " tokens in (" + cached + "% cached)", fmt(u.output_tokens) + " out");
  } else parts.push("no usage reported");
  if (e.reason !== "completed") parts.push(e.reason.replace("_", " "));
  return parts.join(" · ");
}

function onEvent(name, e) {
  switch (name) {
    case "text_delta": stopWaiting(); appendAnswer(e.text); break;
    case "tool_call": stopWaiting(); endAnswer(); toolCard(e.id, e.name, e.args); startWaiting("Running " + e.name + "…"); break;
    case "approval_requested": approvalButtons(e.call_id, e.approval_id, e.tool, e.args); break;
    case "elicitation_requested": questionForm(e); break;
    case "elicitation_resolved": closeQuestion(e.elicitation_id, e.action); break;
    case "custom":
      if (e.name === "tool_progress" && e.data) { const c = state.cards.get(e.data.call_id); if (c && c.status.className === "status") c.status.textContent = String(e.data.message); }
      break;
    case "tool_result":
      finishCard(e.id, e.outcome.status, e.outcome.status === "ok" ? e.outcome.preview + (e.outcome.tail ? "\n…\n" + e.outcome.tail : "") : e.outcome.envelope, e.locator || null);
      break;
    case "step_started": endAnswer(); startWaiting(); break;
    case "warning": note(e.message, "warn"); break;
    case "error": stopWaiting(); note(e.message, "err"); break;
    case "catalog_changed": note("tools changed: +" + (e.added.join(", ") || "none") + " −" + (e.removed.join(", ") || "none")); loadTools(); break;
    case "mode_changed": $("mode").value = e.mode; note("mode " + e.mode + (e.reason === "plan_approved" ? ": plan approved" : "")); break;
    case "hook_finished": if (e.outcome !== "ok" || e.message) note(e.event + " hook " + e.outcome + (e.message ? ": " + e.message : ""), e.outcome === "error" ? "warn" : ""); break;
    case "context_compacted": note("context compacted: conversation " + fmt(e.tokens_before) + " → " + fmt(e.tokens_after) + " tokens"); break;
    case "turn_finished": stopWaiting(); endAnswer(); note(usageLine(e), "usage"); break;
  }
}

async function send(text) {
  if (!state.session) {
    const s = await api("POST", "/v1/sessions", { mode: $("mode").value });
    state.sessions.unshift(s);
    await go(s.id);
  }
  log(el("div", "msg user", text));
  state.busy = true; $("send").disabled = true; $("stop").disabled = false; state.answer = null;
  startWaiting();
  try {
    const res = await fetch(BASE + "/v1/sessions/" + state.session + "/messages", {
      method: "POST", headers: headers(true), body: JSON.stringify({ message: text, toolMask: toolMask() }),
    });
    if (!res.ok) { const e = await res.json().catch(() => ({})); throw new Error(e.error ? e.error.message : res.statusText); }
    loadSessions(); // the new session shows in the sidebar while its first turn streams
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
        let name = "message", data = "";
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (data) onEvent(name, JSON.parse(data));
      }
    }
  } catch (err) { note(String(err.message || err), "err"); }
  endAnswer();
  stopWaiting();
  state.busy = false; $("send").disabled = false; $("stop").disabled = true;
  loadSessions();
}

// ---- tools panel ----
async function loadTools() {
  const { tools } = await api("GET", "/v1/tools");
  const list = $("toollist"); list.textContent = "";
  for (const t of tools) {
    const label = el("label"); label.title = t.description;
    const box = el("input"); box.type = "checkbox"; box.checked = true; box.dataset.tool = t.name;
    label.appendChild(box); label.appendChild(document.createTextNode(t.name + (t.destructive ? " ⚠" : "")));
    list.appendChild(label);
  }
}

function toolMask() {
  const mask = {}; let off = false;
  for (const box of document.querySelectorAll("#toollist input")) { mask[box.dataset.tool] = box.checked; if (!box.checked) off = true; }
  return off ? mask : undefined;
}

// ---- wiring ----
$("composer").onsubmit = (ev) => { ev.preventDefault(); const t = $("input").value.trim(); if (t && !state.busy) { $("input").value = ""; send(t); } };
$("input").onkeydown = (ev) => { if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); $("composer").requestSubmit(); } };
$("input").oninput = () => { const t = $("input"); t.style.height = "auto"; t.style.height = Math.min(t.scrollHeight, innerHeight * 0.4) + "px"; };
$("stop").onclick = () => state.session && api("POST", "/v1/sessions/" + state.session + "/cancel", {});
$("new").onclick = async () => { const s = await api("POST", "/v1/sessions", { mode: $("mode").value }); await go(s.id); };
$("mode").onchange = async () => {
  if (!state.session) return;
  try { const s = await api("PATCH", "/v1/sessions/" + encodeURIComponent(state.session), { mode: $("mode").value }); $("mode").value = s.mode; note("mode " + s.mode + " from the next message on"); }
  catch (e) { note(String(e.message || e), "err"); const s = await api("GET", "/v1/sessions/" + encodeURIComponent(state.session)); $("mode").value = s.mode || "default"; }
};
$("menu").onclick = () => openPanel("sessions");
$("toolsbtn").onclick = () => openPanel("tools");
$("token").onchange = () => { localStorage.setItem("tackle.token", $("token").value); $("auth").style.display = "none"; init(); };
addEventListener("popstate", () => show(sessionFromUrl()));
async function init() {
  try { await loadTools(); await show(sessionFromUrl()); } catch (e) { note(String(e.message || e), "err"); }
}
init();
