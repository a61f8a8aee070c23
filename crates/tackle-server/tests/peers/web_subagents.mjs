// Drives the web page's sub-agent links in headless Chromium with playwright-core.
// Usage: node web_subagents.mjs BASE_URL CHILD_ID. Opens the child session's page, reads the
// link to its parent, follows it, and reads the parent's links to its children. Prints a JSON
// summary of what the page showed; exits non-zero on failure.
import { createRequire } from "node:module";
const require = createRequire(process.env.TACKLE_NODE_MODULES + "/");
const { chromium } = require("playwright-core");

const [base, child] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM, // found by tackle_testkit::peers::chromium
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const out = {};
const poll = { polling: 50 };
const links = () => [...document.querySelectorAll("#log .note.subagent")].map((p) => ({
  text: p.textContent,
  href: p.querySelector("a")?.getAttribute("href") ?? null,
}));
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // The child's own page: its conversation, and a link up to the session that started it.
  await page.goto(base + "/s/" + encodeURIComponent(child));
  await page.waitForSelector("#log .note.subagent a");
  out.child = { url: await page.evaluate(() => location.pathname), links: await page.evaluate(links) };
  out.child.messages = await page.$$eval("#log .msg", (xs) => xs.map((x) => x.textContent));
  // Following the link opens the parent in the same page.
  await page.click("#log .note.subagent a");
  await page.waitForFunction((c) => location.pathname !== "/s/" + encodeURIComponent(c)
    && [...document.querySelectorAll("#log .note.subagent a")].some((a) => a.getAttribute("href").endsWith(encodeURIComponent(c))), child, poll);
  out.parent = { url: await page.evaluate(() => location.pathname), links: await page.evaluate(links) };
  out.parent.messages = await page.$$eval("#log .msg", (xs) => xs.map((x) => x.textContent));
  // And the parent's link leads back down to the child.
  await page.click(`#log .note.subagent a[href$="${encodeURIComponent(child)}"]`);
  await page.waitForFunction((c) => location.pathname === "/s/" + encodeURIComponent(c)
    && document.querySelector("#log .note.subagent a"), child, poll);
  out.back = await page.evaluate(() => location.pathname);
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
