// Tackle's markdown renderer for the web chat: a small CommonMark subset (headings, paragraphs,
// emphasis, strong, strikethrough, inline code, fenced and indented code, block quotes, nested
// lists, task items, tables, rules, links). Safe by construction: `parse` turns text into a
// plain tree and `render` builds DOM nodes from it with createElement and text nodes; no HTML
// is ever parsed, so markup in model output shows as text. Links keep only http, https and
// mailto targets; images become links (the page never loads what a model points at).
// Works in the page (window.TackleMarkdown) and in Node (module.exports) for tests.
(function (root) {
  "use strict";

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const ITEM = /^( {0,12})([-*+]|\d{1,9}[.)])(?:[ \t]+|$)(.*)$/;
  const QUOTE = /^ {0,3}> ?(.*)$/;
  const TABLE_SEP = /^ {0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  function isBlank(line) { return /^\s*$/.test(line); }

  function splitRow(line) {
    let s = line.trim();
    if (s.startsWith("|")) s = s.slice(1);
    if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
    const cells = [];
    let cell = "", code = false;
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c === "\\" && s[i + 1] === "|") { cell += "|"; i++; continue; }
      if (c === "`") code = !code;
      if (c === "|" && !code) { cells.push(cell.trim()); cell = ""; continue; }
      cell += c;
    }
    cells.push(cell.trim());
    return cells;
  }

  /** Block structure of `text`: a list of nodes `{type, ...}`. */
  function parse(text) {
    const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
    return parseBlocks(lines, 0);
  }

  function parseBlocks(lines, depth) {
    const out = [];
    let i = 0;
    let para = [];
    const flush = () => { if (para.length) { out.push({ type: "paragraph", text: para.join("\n") }); para = []; } };
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (isBlank(line)) { flush(); i++; continue; }
      if ((m = FENCE.exec(line))) {
        flush();
        const fence = m[1], lang = m[2] || "";
        const body = [];
        i++;
        while (i < lines.length) {
          const l = lines[i];
          const t = l.trimStart();
          if (t.startsWith(fence) && t.slice(fence.length).trim() === "" && t[0] === fence[0]) { i++; break; }
          body.push(l);
          i++;
        }
        out.push({ type: "code", lang, text: body.join("\n") });
        continue;
      }
      if (!para.length && /^( {4}|\t)/.test(line)) {
        const body = [];
        while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || isBlank(lines[i]))) { body.push(lines[i].replace(/^( {4}|\t)/, "")); i++; }
        while (body.length && isBlank(body[body.length - 1])) body.pop();
        out.push({ type: "code", lang: "", text: body.join("\n") });
        continue;
      }
      if ((m = HEADING.exec(line))) { flush(); out.push({ type: "heading", level: m[1].length, text: m[2] || "" }); i++; continue; }
      if (RULE.test(line) && !(para.length && /^ {0,3}-+\s*$/.test(line))) { flush(); out.push({ type: "rule" }); i++; continue; }
      if (para.length && /^ {0,3}(=+|-+)\s*$/.test(line)) {
        out.push({ type: "heading", level: line.trim()[0] === "=" ? 1 : 2, text: para.join("\n") }); para = []; i++; continue;
      }
      if (QUOTE.test(line)) {
        flush();
        const body = [];
        while (i < lines.length && !isBlank(lines[i]) && (m = QUOTE.exec(lines[i]) || (body.length && !FENCE.test(lines[i]) ? [null, lines[i]] : null))) { body.push(m[1]); i++; }
        out.push({ type: "quote", children: depth < 8 ? parseBlocks(body, depth + 1) : [{ type: "paragraph", text: body.join("\n") }] });
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
        flush();
        const header = splitRow(line);
        const align = splitRow(lines[i + 1]).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : ""));
        i += 2;
        const rows = [];
        while (i < lines.length && !isBlank(lines[i]) && lines[i].includes("|")) { rows.push(splitRow(lines[i])); i++; }
        out.push({ type: "table", header, align, rows });
        continue;
      }
      if ((m = ITEM.exec(line)) && !(para.length && m[1].length > 3)) {
        flush();
        const list = parseList(lines, i, depth);
        out.push(list.node);
        i = list.next;
        continue;
      }
      para.push(line);
      i++;
    }
    flush();
    return out;
  }

  function parseList(lines, start, depth) {
    const first = ITEM.exec(lines[start]);
    const ordered = /\d/.test(first[2]);
    const baseIndent = first[1].length;
    const node = { type: "list", ordered, start: ordered ? parseInt(first[2], 10) : 1, items: [] };
    let i = start;
    while (i < lines.length) {
      const m = ITEM.exec(lines[i]);
      if (!m || m[1].length !== baseIndent || /\d/.test(m[2]) !== ordered) break;
      const contentIndent = m[1].length + m[2].length + 1;
      const body = [m[3]];
      i++;
      while (i < lines.length) {
        const l = lines[i];
        if (isBlank(l)) {
          // A blank line continues the item only if indented content follows.
          if (i + 1 < lines.length && lines[i + 1].length - lines[i + 1].trimStart().length >= contentIndent) { body.push(""); i++; continue; }
          break;
        }
        const indent = l.length - l.trimStart().length;
        const item = ITEM.exec(l);
        if (item && item[1].length <= baseIndent) break;
        if (indent >= Math.min(contentIndent, baseIndent + 2)) { body.push(l.slice(Math.min(indent, contentIndent))); i++; continue; }
        if (item || HEADING.test(l) || FENCE.test(l) || QUOTE.test(l) || RULE.test(l)) break;
        body.push(l.trimStart()); // a lazy continuation of the paragraph
        i++;
      }
      let task = null;
      const t = /^\[([ xX])\][ \t]+/.exec(body[0]);
      if (t) { task = t[1] !== " "; body[0] = body[0].slice(t[0].length); }
      const children = depth < 8 ? parseBlocks(body, depth + 1) : [{ type: "paragraph", text: body.join("\n") }];
      node.items.push({ task, children });
    }
    return { node, next: i };
  }

  /** Inline structure of a paragraph's text: a list of `{type, ...}` runs. */
  function parseInline(text, depth) {
    depth = depth || 0;
    const out = [];
    let buf = "";
    const push = (node) => { if (buf) { out.push({ type: "text", text: buf }); buf = ""; } out.push(node); };
    let i = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === "\\" && i + 1 < text.length && /[!-\/:-@\[-`{-~]/.test(text[i + 1])) { buf += text[i + 1]; i += 2; continue; }
      if (c === "\\" && text[i + 1] === "\n") { push({ type: "break" }); i += 2; continue; }
      if (c === "\n") {
        if (/ {2,}$/.test(buf)) { buf = buf.replace(/ +$/, ""); push({ type: "break" }); } else buf += "\n";
        i++; continue;
      }
      if (c === "`") {
        const ticks = /^`+/.exec(text.slice(i))[0];
        const end = findTicks(text, i + ticks.length, ticks.length);
        if (end >= 0) {
          let code = text.slice(i + ticks.length, end).replace(/\n/g, " ");
          if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
          push({ type: "code", text: code });
          i = end + ticks.length; continue;
        }
        buf += ticks; i += ticks.length; continue;
      }
      if ((c === "*" || c === "_" || c === "~") && depth < 6) {
        const run = c === "~" ? (text.startsWith("~~", i) ? 2 : 0) : (text[i + 1] === c ? 2 : 1);
        if (run) {
          const marker = c.repeat(run);
          const prev = text[i - 1];
          const next = text[i + run];
          const opens = next !== undefined && !/\s/.test(next) && !(c === "_" && prev && /[\p{L}\p{N}]/u.test(prev));
          if (opens) {
            const end = findClosing(text, i + run, marker);
            if (end > i + run) {
              const kind = c === "~" ? "del" : run === 2 ? "strong" : "em";
              push({ type: kind, children: parseInline(text.slice(i + run, end), depth + 1) });
              i = end + run; continue;
            }
          }
        }
      }
      if (c === "!" && text[i + 1] === "[") {
        const link = parseLink(text, i + 1);
        if (link) { push({ type: "image", alt: link.label, href: link.href }); i = link.end; continue; }
      }
      if (c === "[") {
        const link = parseLink(text, i);
        if (link) { push({ type: "link", href: link.href, children: parseInline(link.label, depth + 1) }); i = link.end; continue; }
      }
      if (c === "<") {
        const m = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(text.slice(i));
        if (m) { push({ type: "link", href: m[1], children: [{ type: "text", text: m[1] }] }); i += m[0].length; continue; }
      }
      if ((c === "h" || c === "H") && !/[\p{L}\p{N}]/u.test(text[i - 1] || "")) {
        const m = /^https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"]/i.exec(text.slice(i));
        if (m) { push({ type: "link", href: m[0], children: [{ type: "text", text: m[0] }] }); i += m[0].length; continue; }
      }
      buf += c; i++;
    }
    if (buf) out.push({ type: "text", text: buf });
    return out;
  }

  function findTicks(text, from, n) {
    for (let j = from; j < text.length; j++) {
      if (text[j] !== "`") continue;
      let k = j; while (k < text.length && text[k] === "`") k++;
      if (k - j === n) return j;
      j = k;
    }
    return -1;
  }

  function findClosing(text, from, marker) {
    let j = from + 1;
    while (j <= text.length - marker.length) {
      if (text[j] === "`") { const end = findTicks(text, j + 1, 1); if (end > 0) { j = end + 1; continue; } }
      if (text.startsWith(marker, j) && !/\s/.test(text[j - 1]) && text[j + marker.length] !== marker[0]
          && !(marker[0] === "_" && /[\p{L}\p{N}]/u.test(text[j + marker.length] || ""))) return j;
      j++;
    }
    return -1;
  }

  function parseLink(text, start) {
    let depth = 0, j = start;
    for (; j < text.length; j++) {
      if (text[j] === "\\") { j++; continue; }
      if (text[j] === "[") depth++;
      else if (text[j] === "]" && --depth === 0) break;
    }
    if (j >= text.length || text[j + 1] !== "(") return null;
    const m = /^\(\s*<?([^\s()<>]*)>?(?:\s+"[^"]*")?\s*\)/.exec(text.slice(j + 1));
    if (!m) return null;
    return { label: text.slice(start + 1, j), href: m[1], end: j + 1 + m[0].length };
  }

  /** Only these link targets become links; anything else (javascript:, data:, ...) is text. */
  function safeHref(href) {
    const h = String(href || "").trim();
    if (/^(https?:|mailto:)/i.test(h)) return h;
    if (/^[#\/?]/.test(h) && !h.startsWith("//")) return h;
    return null;
  }

  function renderInline(nodes, doc, parent) {
    for (const n of nodes) {
      switch (n.type) {
        case "text": parent.appendChild(doc.createTextNode(n.text)); break;
        case "break": parent.appendChild(doc.createElement("br")); break;
        case "code": { const e = doc.createElement("code"); e.textContent = n.text; parent.appendChild(e); break; }
        case "em": case "strong": case "del": {
          const e = doc.createElement(n.type); renderInline(n.children, doc, e); parent.appendChild(e); break;
        }
        case "link": {
          const href = safeHref(n.href);
          if (!href) { renderInline(n.children, doc, parent); parent.appendChild(doc.createTextNode(" (" + n.href + ")")); break; }
          const a = doc.createElement("a");
          a.setAttribute("href", href);
          a.setAttribute("target", "_blank");
          a.setAttribute("rel", "noopener noreferrer nofollow");
          renderInline(n.children, doc, a);
          parent.appendChild(a);
          break;
        }
        case "image": {
          // Never loaded: a link the person may choose to open.
          const href = safeHref(n.href);
          const label = "image: " + (n.alt || n.href);
          if (!href) { parent.appendChild(doc.createTextNode("[" + label + "]")); break; }
          const a = doc.createElement("a");
          a.setAttribute("href", href); a.setAttribute("target", "_blank"); a.setAttribute("rel", "noopener noreferrer nofollow");
          a.textContent = "[" + label + "]";
          parent.appendChild(a);
          break;
        }
      }
    }
  }

  function renderBlocks(blocks, doc, parent, tight) {
    for (const b of blocks) {
      switch (b.type) {
        case "paragraph": {
          const p = doc.createElement(tight ? "span" : "p");
          renderInline(parseInline(b.text), doc, p);
          parent.appendChild(p);
          break;
        }
        case "heading": {
          const h = doc.createElement("h" + Math.min(6, b.level + 1));
          renderInline(parseInline(b.text), doc, h);
          parent.appendChild(h);
          break;
        }
        case "rule": parent.appendChild(doc.createElement("hr")); break;
        case "code": {
          const pre = doc.createElement("pre");
          const code = doc.createElement("code");
          if (/^[\w+#.-]{1,30}$/.test(b.lang)) { code.className = "language-" + b.lang; pre.dataset.lang = b.lang; }
          code.textContent = b.text;
          pre.appendChild(code);
          parent.appendChild(pre);
          break;
        }
        case "quote": {
          const q = doc.createElement("blockquote");
          renderBlocks(b.children, doc, q, false);
          parent.appendChild(q);
          break;
        }
        case "list": {
          const l = doc.createElement(b.ordered ? "ol" : "ul");
          if (b.ordered && b.start !== 1) l.setAttribute("start", String(b.start));
          const tightList = b.items.every((it) => it.children.filter((c) => c.type === "paragraph").length <= 1);
          for (const item of b.items) {
            const li = doc.createElement("li");
            if (item.task !== null) {
              li.className = "task";
              const box = doc.createElement("input");
              box.type = "checkbox"; box.disabled = true; box.checked = item.task;
              li.appendChild(box);
              li.appendChild(doc.createTextNode(" "));
            }
            renderBlocks(item.children, doc, li, tightList);
            l.appendChild(li);
          }
          parent.appendChild(l);
          break;
        }
        case "table": {
          const wrap = doc.createElement("div"); wrap.className = "table";
          const t = doc.createElement("table");
          const head = doc.createElement("thead"); const hr = doc.createElement("tr");
          b.header.forEach((cell, k) => { const th = doc.createElement("th"); if (b.align[k]) th.style.textAlign = b.align[k]; renderInline(parseInline(cell), doc, th); hr.appendChild(th); });
          head.appendChild(hr); t.appendChild(head);
          const body = doc.createElement("tbody");
          for (const row of b.rows) {
            const tr = doc.createElement("tr");
            b.header.forEach((_, k) => { const td = doc.createElement("td"); if (b.align[k]) td.style.textAlign = b.align[k]; renderInline(parseInline(row[k] || ""), doc, td); tr.appendChild(td); });
            body.appendChild(tr);
          }
          t.appendChild(body); wrap.appendChild(t); parent.appendChild(wrap);
          break;
        }
      }
    }
  }

  /** Renders markdown `text` into a new element (`div.md`) of `doc`. */
  function render(text, doc) {
    const div = doc.createElement("div");
    div.className = "md";
    renderBlocks(parse(text), doc, div, false);
    return div;
  }

  const api = { parse, parseInline, render, safeHref };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TackleMarkdown = api;
})(typeof window !== "undefined" ? window : globalThis);
