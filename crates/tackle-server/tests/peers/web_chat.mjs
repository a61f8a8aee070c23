// Drives the web chat page in headless Chromium with playwright-core.
// Usage: node web_chat.mjs BASE_URL. Prints a JSON summary of what the page showed; exits
// non-zero on failure. Screenshots go to $SCREENSHOT_DIR/web-1280.png and web-375.png.
import { createRequire } from "node:module";
const require = createRequire(process.env.TACKLE_NODE_MODULES + "/");
const { chromium } = require("playwright-core");

const base = process.argv[2];
const shots = process.env.SCREENSHOT_DIR || "/tmp";
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM, // found by tackle_testkit::peers::chromium
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--font-render-hinting=none"],
});

/** Elements sticking out of the viewport sideways (outside any element that scrolls or clips),
 *  whether the page scrolls sideways, and where the chat is. */
function layout() {
  const w = innerWidth, bad = [];
  const clips = (e) => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) { if (getComputedStyle(p).overflowX !== "visible") return true; } return false; };
  for (const e of document.body.querySelectorAll("*")) {
    if (!e.getClientRects().length || clips(e) || e.closest("dialog:not([open])")) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < -1 || r.right > w + 1) bad.push((e.id ? "#" + e.id : e.tagName.toLowerCase() + "." + e.className) + " " + Math.round(r.left) + ".." + Math.round(r.right));
  }
  const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height }; };
  return { width: w, height: innerHeight, outside: bad, scrollWidth: document.documentElement.scrollWidth, log: box("#log"), input: box("#input"), send: box("#send") };
}

const out = {};
const poll = { polling: 50 };
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("dialog", (d) => d.accept());
  // Frames come late, as in a busy or hidden tab: what the page shows cannot depend on one
  // coming between two events. (So waits poll on a timer, not on frames.)
  await page.addInitScript(() => {
    window.requestAnimationFrame = (f) => setTimeout(() => f(performance.now()), 60000);
    window.cancelAnimationFrame = (id) => clearTimeout(id);
  });
  await page.goto(base + "/");
  await page.waitForSelector("#toollist input[data-tool=shell]");
  out.tools = await page.$$eval("#toollist input", (xs) => xs.map((x) => x.dataset.tool));
  // Mask web_fetch for this turn with its toggle.
  await page.uncheck("#toollist input[data-tool=web_fetch]");
  // Something shows while the (slow) model has not answered yet: recorded by an observer, so
  // a busy machine cannot make the check miss it.
  await page.evaluate(() => {
    window.__sawWaiting = false;
    new MutationObserver(() => {
      if (document.querySelector("#log .waiting") && !document.querySelector("#log .tool")) window.__sawWaiting = true;
    }).observe(document.body, { childList: true, subtree: true });
  });
  await page.fill("#input", "list the files, write notes, count, then say hello");
  await page.press("#input", "Enter");
  await page.waitForSelector(".tool[data-call] .status.ok");
  out.firstCard = await page.$eval(".tool .name", (e) => e.textContent);
  out.waiting = await page.evaluate(() => window.__sawWaiting);
  out.url = await page.evaluate(() => location.pathname);
  // write_file waits for approval: the card shows what will be written.
  await page.waitForSelector(".tool .plan:not([hidden]) .diff");
  out.writePlan = await page.$eval(".tool .plan:not([hidden])", (e) => e.textContent);
  await page.click(".tool .actions button.approve");
  // shell: approve, then its long output is collapsed.
  await page.waitForFunction(() => document.querySelectorAll(".tool .plan:not([hidden])").length === 1 && document.querySelector(".tool .plan:not([hidden])").textContent.includes("seq 1 40"), undefined, poll);
  out.shellPlan = await page.$eval(".tool .plan:not([hidden])", (e) => e.textContent);
  await page.click(".tool .actions button.approve:not([disabled])");
  // The last shell call: denied with a reason.
  await page.waitForFunction(() => { const p = document.querySelector(".tool .plan:not([hidden])"); return p && p.textContent.includes("rm -rf"); }, undefined, poll);
  await page.fill(".tool .actions input:not([disabled])", "not in this workspace");
  await page.click(".tool .actions button.deny:not([disabled])");
  await page.waitForFunction(() => [...document.querySelectorAll(".note")].some((n) => n.textContent.startsWith("done")), undefined, poll);
  const cards = () => page.$$eval(".tool", (cards) => cards.map((c) => ({
    name: c.querySelector(".name").textContent,
    summary: c.querySelector(".summary").textContent,
    status: c.querySelector(".status").textContent,
    output: c.querySelector(".out").textContent,
    collapsed: !!c.querySelector(".out details.more"),
    args: c.querySelector("details.args pre").textContent,
  })));
  out.cards = await cards();
  out.usage = await page.$eval(".note.usage", (e) => e.textContent);
  out.answer = await page.$$eval(".msg.assistant", (xs) => xs.map((x) => x.textContent).join("|"));
  out.markdown = await page.$eval(".msg.assistant:last-of-type .md", (md) => ({
    headings: [...md.querySelectorAll("h2, h3")].map((h) => h.textContent),
    items: [...md.querySelectorAll("li")].map((li) => li.textContent),
    strong: [...md.querySelectorAll("strong")].map((s) => s.textContent),
    code: [...md.querySelectorAll("pre code")].map((c) => c.textContent),
    links: [...md.querySelectorAll("a")].map((a) => a.getAttribute("href")),
  }));
  out.scriptsInLog = await page.$$eval("#log script, #log img, #log iframe", (xs) => xs.length);
  out.pwned = await page.evaluate(() => window.__pwned ?? null);
  await page.waitForSelector(".session");
  out.sessions = await page.$$eval(".session", (xs) => xs.length);
  out.layout1280 = await page.evaluate(layout);
  await page.screenshot({ path: shots + "/web-1280.png" });

  // The session's URL opens it again after a reload: history, cards, the denial as a message.
  await page.reload();
  await page.waitForSelector(".tool .status.error");
  out.reloaded = { url: await page.evaluate(() => location.pathname), cards: await cards() };
  out.reloadedMarkdown = await page.$$eval(".msg.assistant .md h2, .msg.assistant .md h3", (xs) => xs.length);
  out.pwnedAfterReload = await page.evaluate(() => window.__pwned ?? null);

  // Rename in the sidebar.
  await page.click(".session.active button.rename");
  await page.fill(".session input", "Renamed in the page");
  await page.press(".session input", "Enter");
  await page.waitForFunction(() => document.querySelector(".session.active a span")?.textContent === "Renamed in the page", undefined, poll);
  out.title = await page.$eval("#title", (e) => e.textContent);

  // A second, empty session, deleted again.
  await page.click("#new");
  await page.waitForFunction(() => document.querySelectorAll(".session").length === 2, undefined, poll);
  const second = await page.evaluate(() => location.pathname);
  await page.click(".session.active button.delete");
  await page.waitForFunction(() => location.pathname === "/" && document.querySelectorAll(".session").length === 1, undefined, poll);
  out.deleted = second;

  // A phone: one column, nothing off-screen, the sessions panel on demand.
  const phone = await browser.newPage({ viewport: { width: 375, height: 740 } });
  phone.on("pageerror", (e) => errors.push(String(e)));
  await phone.goto(base + out.url);
  await phone.waitForSelector(".tool .status.error");
  out.layout375 = await phone.evaluate(layout);
  await phone.screenshot({ path: shots + "/web-375.png" });
  await phone.click("#menu");
  await phone.waitForSelector("#sessions .session", { state: "visible" });
  out.layout375Sessions = await phone.evaluate(layout);
  out.sessionsPanel = await phone.$eval("#sidebar", (e) => { const r = e.getBoundingClientRect(); return { left: r.left, right: r.right, width: r.width }; });
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
