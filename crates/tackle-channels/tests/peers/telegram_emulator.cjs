// The Telegram Bot API for Tackle's channel tests: the npm package telegram-test-api (installed by
// scripts/test-deps.sh), with what it lacks added here, on the tests' side:
//
// - getUpdates that behaves like Telegram's: updates stay until a later call's `offset` confirms
//   them (the emulator drops them once read), and `timeout` long-polls;
// - Telegram's checks on sendMessage / editMessageText: HTML entities parsed by Telegram's rules
//   (known tags only, balanced, nothing unescaped), at most 4096 characters after parsing, no
//   empty text, callback_data of at most 64 bytes; editMessageText answering the message, failing
//   on unknown messages and on "message is not modified", and removing buttons it is not given;
// - sendChatAction, setMyCommands, getFile and file downloads;
// - webhooks that send the secret token header and deliver again until the bot answers 2xx;
// - faults on demand (429 with retry_after, dropped connections, 500, calls never answered) and a
//   log of every call.
//
// Usage: TACKLE_NODE_MODULES=... node telegram_emulator.cjs  -> prints {"port": N}; exits when
// stdin closes.
'use strict';

const path = require('path');
const http = require('http');

const modules = process.env.TACKLE_NODE_MODULES;
if (!modules) {
  console.error('set TACKLE_NODE_MODULES to the test peers\' node_modules');
  process.exit(2);
}
const TelegramServer = require(path.join(modules, 'telegram-test-api'));
// The emulator's own express (4.x), whatever else the test peers install.
const express = require(require.resolve('express', { paths: [path.join(modules, 'telegram-test-api')] }));

const server = new TelegramServer({ host: '127.0.0.1', storeTimeout: 24 * 3600 });
const app = server.webServer;

const calls = [];           // every Bot API call: {seq, method, params, at, status, response}
const edits = new Map();    // "chat:message" -> [texts] in order
const files = new Map();    // file_id -> {file_path, bytes}
const faults = [];          // {method, kind, retry_after, count}
const webhookQueue = [];    // updates waiting for delivery to a webhook
const webhookLog = [];      // {update_id, status, secret}
let seq = 0;

const params = (req) => Object.assign({}, req.query || {}, req.body || {});
const fail = (res, code, description, parameters) =>
  res.status(code).json(Object.assign({ ok: false, error_code: code, description }, parameters ? { parameters } : {}));

// ---- Telegram's HTML parse mode -------------------------------------------------------------

const TAGS = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'span', 'tg-spoiler', 'a', 'code',
  'pre', 'blockquote', 'tg-emoji']);

/** Parses Telegram HTML: returns {text} (what the person sees) or {error}. */
function parseHtml(html) {
  let text = '';
  const stack = [];
  let i = 0;
  while (i < html.length) {
    const c = html[i];
    if (c === '&') {
      const m = /^&(lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});/.exec(html.slice(i));
      if (!m) return { error: `Unsupported HTML entity at byte offset ${i}` };
      const name = m[1];
      text += name === 'lt' ? '<' : name === 'gt' ? '>' : name === 'amp' ? '&' : name === 'quot' ? '"'
        : String.fromCodePoint(name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10));
      i += m[0].length;
    } else if (c === '<') {
      const end = html.indexOf('>', i);
      if (end < 0) return { error: `Unclosed start tag at byte offset ${i}` };
      const inner = html.slice(i + 1, end);
      if (inner.startsWith('/')) {
        const name = inner.slice(1).trim().toLowerCase();
        const open = stack.pop();
        if (!open || open.name !== name) return { error: `Unmatched end tag at byte offset ${i}, expected "</${open ? open.name : ''}>", found "</${name}>"` };
      } else {
        const m = /^([a-z-]+)((?:\s+[a-z-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*$/i.exec(inner);
        if (!m) return { error: `Unsupported start tag "${inner}" at byte offset ${i}` };
        const name = m[1].toLowerCase();
        if (!TAGS.has(name)) return { error: `Unsupported start tag "${name}" at byte offset ${i}` };
        const parent = stack[stack.length - 1];
        if (parent && (parent.name === 'code' || (parent.name === 'pre' && name !== 'code'))) {
          return { error: `Can't use <${name}> inside <${parent.name}>` };
        }
        const attrs = m[2];
        if (/class\s*=/.test(attrs) && !(name === 'code' && parent && parent.name === 'pre') && name !== 'span') {
          return { error: `Unsupported attribute class of <${name}>` };
        }
        if (name === 'code' && parent && parent.name === 'pre' && attrs && !/^\s*class\s*=\s*("language-[^"<>&]*"|'language-[^'<>&]*')\s*$/.test(attrs)) {
          return { error: `Bad class of <code> in <pre>: ${attrs}` };
        }
        stack.push({ name });
      }
      i = end + 1;
    } else if (c === '>') {
      return { error: `Unexpected ">" at byte offset ${i}` };
    } else {
      text += c;
      i += 1;
    }
  }
  if (stack.length) return { error: `Can't find end tag corresponding to start tag "${stack[stack.length - 1].name}"` };
  return { text };
}

/** Telegram's checks of a message text; returns an error description or null. */
function checkText(p) {
  if (typeof p.text !== 'string' || p.text.trim() === '') return 'Bad Request: message text is empty';
  let visible = p.text;
  if (p.parse_mode === 'HTML') {
    const r = parseHtml(p.text);
    if (r.error) return `Bad Request: can't parse entities: ${r.error}`;
    visible = r.text;
  } else if (p.parse_mode) {
    return `Bad Request: unsupported parse_mode in the emulator: ${p.parse_mode}`;
  }
  // JavaScript lengths are UTF-16 code units, as Telegram counts.
  if (visible.length > 4096) return 'Bad Request: message is too long';
  if (visible.trim() === '') return 'Bad Request: message text is empty';
  const markup = typeof p.reply_markup === 'string' ? JSON.parse(p.reply_markup) : p.reply_markup;
  for (const row of (markup && markup.inline_keyboard) || []) {
    for (const button of row) {
      if (button.callback_data !== undefined && Buffer.byteLength(String(button.callback_data)) > 64) {
        return 'Bad Request: BUTTON_DATA_INVALID';
      }
    }
  }
  return null;
}

// ---- Routes that run before the emulator's own ---------------------------------------------

const ext = express.Router();

// Log every bot call with its answer; apply faults.
ext.all('/bot:token/:method', (req, res, next) => {
  const entry = { seq: ++seq, method: req.params.method, params: params(req), at: Date.now() };
  calls.push(entry);
  const json = res.json.bind(res);
  res.json = (body) => {
    entry.status = res.statusCode;
    entry.response = body;
    return json(body);
  };
  const fault = faults.find((f) => f.method === req.params.method && f.count > 0);
  if (fault) {
    fault.count -= 1;
    entry.fault = fault.kind;
    if (fault.kind === '429') {
      return fail(res, 429, `Too Many Requests: retry after ${fault.retry_after}`, { retry_after: fault.retry_after });
    }
    if (fault.kind === 'drop') {
      entry.status = 0;
      return req.socket.destroy();
    }
    if (fault.kind === '500') return fail(res, 500, 'Internal Server Error');
    // Never answered: the call waits until the bot gives up on it.
    if (fault.kind === 'hang') return undefined;
  }
  next();
});

function pendingFor(token) {
  return server.storage.userMessages.filter((u) => u.botToken === token).sort((a, b) => a.updateId - b.updateId);
}

function waitForUpdate(ms) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      ['AddedUserMessage', 'AddedUserCommand', 'AddedUserCallbackQuery'].forEach((e) => server.off(e, done));
      resolve();
    };
    const timer = setTimeout(done, ms);
    ['AddedUserMessage', 'AddedUserCommand', 'AddedUserCallbackQuery'].forEach((e) => server.on(e, done));
  });
}

ext.all('/bot:token/getUpdates', async (req, res) => {
  const token = req.params.token;
  const p = params(req);
  if (server.webhooks[token]) {
    return fail(res, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
  }
  if (p.offset !== undefined && p.offset !== null) {
    const offset = Number(p.offset);
    server.storage.userMessages = server.storage.userMessages.filter((u) => u.botToken !== token || u.updateId >= offset);
  }
  const deadline = Date.now() + Number(p.timeout || 0) * 1000;
  let closed = false;
  req.on('close', () => { closed = true; });
  while (pendingFor(token).length === 0 && Date.now() < deadline && !closed) {
    await waitForUpdate(Math.min(deadline - Date.now(), 500));
  }
  const limit = Number(p.limit || 100);
  res.json({ ok: true, result: pendingFor(token).slice(0, limit).map((u) => TelegramServer.formatUpdate(u)) });
});

ext.all('/bot:token/sendMessage', (req, res, next) => {
  const error = checkText(params(req));
  if (error) return fail(res, 400, error);
  next();
});

ext.all('/bot:token/editMessageText', (req, res) => {
  const p = params(req);
  const error = checkText(p);
  if (error) return fail(res, 400, error);
  const stored = server.storage.botMessages.find((u) => String(u.messageId) === String(p.message_id)
    && String(u.message.chat_id) === String(p.chat_id) && u.botToken === req.params.token);
  if (!stored) return fail(res, 400, 'Bad Request: message to edit not found');
  const markup = p.reply_markup === undefined ? undefined
    : (typeof p.reply_markup === 'string' ? JSON.parse(p.reply_markup) : p.reply_markup);
  if (stored.message.text === p.text && JSON.stringify(stored.message.reply_markup) === JSON.stringify(markup)) {
    return fail(res, 400, 'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message');
  }
  const key = `${p.chat_id}:${p.message_id}`;
  if (!edits.has(key)) edits.set(key, []);
  edits.get(key).push({ text: p.text, at: Date.now() });
  stored.message = Object.assign({}, stored.message, { text: p.text, parse_mode: p.parse_mode, reply_markup: markup });
  if (markup === undefined) delete stored.message.reply_markup;
  res.json({ ok: true, result: { message_id: stored.messageId, date: Math.floor(stored.time / 1000), chat: { id: Number(p.chat_id), type: 'private' }, text: p.text } });
});

ext.all('/bot:token/sendChatAction', (req, res) => res.json({ ok: true, result: true }));
ext.all('/bot:token/setMyCommands', (req, res) => res.json({ ok: true, result: true }));

ext.all('/bot:token/getFile', (req, res) => {
  const f = files.get(String(params(req).file_id));
  if (!f) return fail(res, 400, 'Bad Request: invalid file_id');
  res.json({ ok: true, result: { file_id: params(req).file_id, file_unique_id: `u${params(req).file_id}`, file_size: f.bytes.length, file_path: f.file_path } });
});

ext.get('/file/bot:token/*', (req, res) => {
  const wanted = req.params[0];
  const f = [...files.values()].find((x) => x.file_path === wanted);
  if (!f) return res.status(404).end();
  res.type('application/octet-stream').send(f.bytes);
});

ext.all('/bot:token/setWebhook', (req, res) => {
  const token = req.params.token;
  const p = params(req);
  if (!p.url) return fail(res, 400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
  server.webhooks[token] = { url: p.url, secret_token: p.secret_token };
  // Updates not fetched yet go to the webhook now.
  for (const u of pendingFor(token)) webhookQueue.push(u);
  server.storage.userMessages = server.storage.userMessages.filter((u) => u.botToken !== token);
  deliver();
  res.json({ ok: true, result: true, description: 'Webhook was set' });
});

ext.all('/bot:token/deleteWebhook', (req, res) => {
  const token = req.params.token;
  delete server.webhooks[token];
  for (let i = webhookQueue.length - 1; i >= 0; i -= 1) {
    if (webhookQueue[i].botToken === token) server.storage.userMessages.push(webhookQueue.splice(i, 1)[0]);
  }
  res.json({ ok: true, result: true, description: 'Webhook was deleted' });
});

// Webhook delivery, in order, again and again until the bot answers 2xx.
let delivering = false;
async function deliver() {
  if (delivering) return;
  delivering = true;
  while (webhookQueue.length) {
    const u = webhookQueue[0];
    const hook = server.webhooks[u.botToken];
    if (!hook) { webhookQueue.shift(); server.storage.userMessages.push(u); continue; }
    let status = 0;
    try {
      const headers = { 'content-type': 'application/json' };
      if (hook.secret_token) headers['x-telegram-bot-api-secret-token'] = hook.secret_token;
      const r = await fetch(hook.url, { method: 'POST', headers, body: JSON.stringify(TelegramServer.formatUpdate(u)) });
      status = r.status;
    } catch (e) {
      status = 0;
    }
    webhookLog.push({ update_id: u.updateId, status, at: Date.now() });
    if (status >= 200 && status < 300) webhookQueue.shift();
    else await new Promise((r) => setTimeout(r, 300));
  }
  delivering = false;
}

server.addUserUpdate = async function addUserUpdate(update) {
  if (this.webhooks[update.botToken]) {
    webhookQueue.push(update);
    deliver();
  } else {
    this.storage.userMessages.push(update);
  }
  this.updateId += 1;
};

// ---- The person's side and the tests' controls ---------------------------------------------

ext.post('/__user/message', async (req, res) => {
  const b = req.body;
  const updateId = server.updateId;
  const message = Object.assign({ date: Math.floor(Date.now() / 1000) }, b.message, { botToken: b.token });
  await server.addUserMessage(message);
  res.json({ ok: true, update_id: updateId });
});

ext.post('/__user/callback', async (req, res) => {
  const b = req.body;
  const updateId = server.updateId;
  const callbackId = server.callbackId;
  await server.addUserCallback({ botToken: b.token, from: b.from, message: b.message, data: b.data });
  res.json({ ok: true, update_id: updateId, callback_id: String(callbackId) });
});

ext.get('/__log', (req, res) => res.json({ calls, webhook: webhookLog }));

ext.get('/__messages', (req, res) => {
  const token = req.query.token;
  res.json(server.storage.botMessages.filter((u) => u.botToken === token).map((u) => ({
    message_id: u.messageId,
    chat_id: Number(u.message.chat_id),
    text: u.message.text,
    reply_markup: u.message.reply_markup || null,
    edits: edits.get(`${u.message.chat_id}:${u.messageId}`) || [],
  })));
});

ext.get('/__pending', (req, res) => res.json(pendingFor(req.query.token).map((u) => u.updateId)));

ext.post('/__faults', (req, res) => {
  faults.push(Object.assign({ count: 1 }, req.body));
  res.json({ ok: true });
});

ext.post('/__files', (req, res) => {
  files.set(String(req.body.file_id), { file_path: req.body.file_path, bytes: Buffer.from(req.body.content_base64, 'base64') });
  res.json({ ok: true });
});

// Put these routes after the body parsers and before the emulator's routes.
app.use(ext);
const stack = app._router.stack;
const mine = stack.pop();
const at = stack.findIndex((l) => l.name === 'requestLogger');
stack.splice(at < 0 ? 4 : at + 1, 0, mine);

const listener = http.createServer(app);
listener.listen(0, '127.0.0.1', () => {
  server.started = true;
  process.stdout.write(`${JSON.stringify({ port: listener.address().port })}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
