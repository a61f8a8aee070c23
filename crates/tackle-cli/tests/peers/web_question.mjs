// Answers an MCP server's question in the web chat page, in headless Chromium with
// playwright-core. Usage: node web_question.mjs BASE_URL. Prints a JSON summary of what the page
// showed; exits non-zero on failure. A screenshot goes to $SCREENSHOT_DIR/web-question.png.
import { createRequire } from "node:module";
const require = createRequire(process.env.TACKLE_NODE_MODULES + "/");
const { chromium } = require("playwright-core");

const base = process.argv[2];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--font-render-hinting=none"],
});
const out = {};
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(base + "/");
  await page.waitForSelector("#toollist input");
  await page.fill("#input", "sign me up");
  await page.press("#input", "Enter");
  await page.waitForSelector(".tool .question [data-field]");
  out.asks = await page.$eval(".question .asks", (e) => e.textContent);
  out.status = await page.$eval(".tool .status", (e) => e.textContent);
  out.fields = await page.$$eval(".question [data-field]", (xs) => xs.map((x) => x.dataset.field));
  out.defaults = await page.evaluate(() => ({
    integer: document.querySelector('[data-field=integer] input').value,
    friend: document.querySelector('[data-field=untitledSingleSelectEnum] select').selectedOptions[0].textContent,
    hero: document.querySelector('[data-field=titledSingleSelectEnum] select').selectedOptions[0].textContent,
  }));
  // Sent without the required name: the server refuses and the page says why.
  await page.click(".question button.approve");
  await page.waitForSelector(".question .problem:not([hidden])");
  out.problem = await page.$eval(".question .problem", (e) => e.textContent);
  await page.fill('[data-field=name] input', "Ada Lovelace");
  await page.fill('[data-field=email] input', "ada@example.com");
  await page.check('[data-field=check] input');
  await page.selectOption('[data-field=titledSingleSelectEnum] select', { label: "Wonder Woman" });
  if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: process.env.SCREENSHOT_DIR + "/web-question.png" });
  await page.click(".question button.approve:not([disabled])");
  await page.waitForSelector(".tool .status.ok");
  out.output = await page.$eval(".tool .out", (e) => e.textContent);
  out.answered = await page.$eval(".question", (e) => e.classList.contains("answered"));
  await page.waitForFunction(() => [...document.querySelectorAll(".note")].some((n) => n.textContent.startsWith("done")));
  out.errors = errors;
  console.log(JSON.stringify(out));
} catch (e) {
  console.error(String(e && e.stack || e));
  console.error(JSON.stringify(out));
  process.exitCode = 1;
} finally {
  await browser.close();
}
