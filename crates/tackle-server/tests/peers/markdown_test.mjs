// Unit tests of the web page's markdown renderer (src/web/markdown.js), run with node's own
// test runner by tests/web_markdown.rs. A minimal DOM records what the renderer builds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const md = require(process.env.MARKDOWN_JS);

class Node {
  constructor(tag, text) { this.tag = tag; this.text = text; this.children = []; this.attrs = {}; this.style = {}; this.dataset = {}; this.className = ""; }
  appendChild(c) { this.children.push(c); return c; }
  setAttribute(k, v) { this.attrs[k] = v; }
  set textContent(t) { this.children = [new Node("#text", t)]; }
  get textContent() { return this.tag === "#text" ? this.text : this.children.map((c) => c.textContent).join(""); }
  all(tag) { const out = this.tag === tag ? [this] : []; for (const c of this.children) out.push(...c.all(tag)); return out; }
}
const doc = { createElement: (t) => new Node(t), createTextNode: (t) => new Node("#text", t) };
const render = (text) => md.render(text, doc);

test("blocks: headings, paragraphs, lists, quotes, code, tables, rules", () => {
  const out = render("# Title\n\nSome **bold** and *em* and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted *text*\n\n```rust\nlet x = 1;\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n---\n");
  assert.equal(out.all("h2")[0].textContent, "Title");
  assert.equal(out.all("strong")[0].textContent, "bold");
  assert.equal(out.all("em")[0].textContent, "em");
  assert.equal(out.all("code")[0].textContent, "code");
  assert.equal(out.all("ul").length, 2, "a nested list");
  assert.deepEqual(out.all("ul")[0].children.map((li) => li.textContent), ["one", "twonested"]);
  assert.deepEqual(out.all("ol")[0].children.map((li) => li.textContent), ["first", "second"]);
  assert.equal(out.all("blockquote")[0].all("em")[0].textContent, "text");
  const pre = out.all("pre")[0];
  assert.equal(pre.textContent, "let x = 1;");
  assert.equal(pre.dataset.lang, "rust");
  assert.deepEqual(out.all("th").map((t) => t.textContent), ["a", "b"]);
  assert.equal(out.all("td")[1].style.textAlign, "right");
  assert.equal(out.all("hr").length, 1);
});

test("markup in the text stays text", () => {
  const out = render("<script>alert(1)</script>\n\n<img src=x onerror=alert(2)> **<b>x</b>**\n\n```\n<script>no</script>\n```");
  for (const tag of ["script", "img", "b", "iframe"]) assert.equal(out.all(tag).length, 0, tag);
  assert.match(out.textContent, /<script>alert\(1\)<\/script>/);
  assert.match(out.textContent, /<img src=x onerror=alert\(2\)>/);
});

test("only http, https and mailto links; images are never loaded", () => {
  const out = render("[ok](https://example.com/a) [bad](javascript:alert(1)) [worse](javascript:void) [data](data:text/html,hi) [m](mailto:a@b.c) ![pic](https://evil.example/p.png?secret)");
  const hrefs = out.all("a").map((a) => a.attrs.href);
  assert.deepEqual(hrefs, ["https://example.com/a", "mailto:a@b.c", "https://evil.example/p.png?secret"]);
  assert.equal(out.all("img").length, 0);
  assert.match(out.textContent, /\[bad\]\(javascript:alert\(1\)\)/);
  assert.match(out.textContent, /worse \(javascript:void\)/);
  for (const a of out.all("a")) assert.equal(a.attrs.rel, "noopener noreferrer nofollow");
  assert.equal(md.safeHref(" JavaScript:alert(1)"), null);
  assert.equal(md.safeHref("//evil.example"), null);
});

test("snake_case, lone stars and unclosed markers stay as written", () => {
  const out = render("read_file and tool_search; 2 * 3 * 4; **open; `tick");
  assert.equal(out.textContent, "read_file and tool_search; 2 * 3 * 4; **open; `tick");
});

test("task items and a streamed prefix render without throwing", () => {
  const out = render("- [x] done\n- [ ] todo");
  assert.equal(out.all("input").length, 2);
  const text = "# Hi\n\n- a **b** `c` [d](https://e) ```\ncode";
  for (let n = 0; n <= text.length; n++) render(text.slice(0, n));
});

test("pathological input stays fast", () => {
  const start = Date.now();
  render("*".repeat(5000) + "\n" + "[".repeat(3000) + "\n" + "> ".repeat(2000) + "x\n" + "`".repeat(4000));
  assert.ok(Date.now() - start < 5000, "took " + (Date.now() - start) + " ms");
});
