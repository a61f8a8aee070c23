// Drives the web chat page in headless Chromium with playwright-core.
// Usage: node web_chat.mjs BASE_URL. Prints a JSON summary; exits non-zero on failure.
import { createRequire } from "node:module";
const require = createRequire(process.env.TACKLE_NODE_MODULES + "/");
const { chromium } = require("playwright-core");

const base = process.argv[2];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM, // found by tackle_testkit::peers::chromium
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const out = {};
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(base + "/");
  await page.waitForSelector("#toollist input[data-tool=shell]");
  out.tools = await page.$$eval("#toollist input", (xs) => xs.map((x) => x.dataset.tool));
  // Mask web_fetch for this turn with its toggle.
  await page.uncheck("#toollist input[data-tool=web_fetch]");
  await page.fill("#input", "list the files, then say hello");
  await page.press("#input", "Enter");
  // A tool card for list_files, finished ok.
  await page.waitForSelector(".tool[data-call] .status.ok");
  out.firstCard = await page.$eval(".tool .name", (e) => e.textContent);
  // The shell call waits for approval: approve it in the page.
  const approve = await page.waitForSelector("button.approve");
  await approve.click();
  await page.waitForFunction(() => [...document.querySelectorAll(".note")].some((n) => n.textContent.startsWith("done")));
  out.cards = await page.$$eval(".tool", (cards) => cards.map((c) => ({
    name: c.querySelector(".name").textContent,
    status: c.querySelector(".status").textContent,
    output: c.querySelector(".out").textContent,
  })));
  out.answer = await page.$$eval(".msg.assistant", (xs) => xs.map((x) => x.textContent).join("|"));
  // The sidebar refreshes asynchronously: wait for the new session to be listed.
  await page.waitForSelector(".session");
  out.sessions = await page.$$eval(".session", (xs) => xs.length);
  await page.screenshot({ path: process.env.SCREENSHOT || "/tmp/tackle-web.png" });
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
