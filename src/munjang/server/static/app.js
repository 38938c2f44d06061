// munjang's web page: search a collection, compare sentences, map a collection, search images.
// Plain JavaScript over the same HTTP API any client uses; no external scripts, so it works offline.
"use strict";

const $ = (id) => document.getElementById(id);
const PALETTE = ["#2f5bd3", "#d1495b", "#edae49", "#00798c", "#6a4c93", "#30a46c", "#ff7f50", "#8d6e63", "#5c7cfa", "#94a3b8"];
const mapState = { points: [] };

// -- talking to the server -------------------------------------------------------------------------
function requestHeaders() {
  const headers = { "Content-Type": "application/json" };
  const key = $("api-key").value.trim();
  if (key) headers.Authorization = "Bearer " + key;
  return headers;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: requestHeaders(),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let payload = null;
  try {
    payload = await response.json();
  } catch (_) {
    payload = null;
  }
  if (!response.ok) {
    const message = payload && payload.error ? payload.error.message : `HTTP ${response.status}`;
    throw new Error(message);
  }
  return payload;
}

function setStatus(id, text, isError = false) {
  const element = $(id);
  element.textContent = text;
  element.classList.toggle("error", isError);
}

function fillSelect(id, values) {
  const select = $(id);
  const previous = select.value;
  select.replaceChildren(...values.map((value) => new Option(value, value)));
  if (values.includes(previous)) select.value = previous;
}

async function loadServer() {
  try {
    const models = await api("GET", "/v1/models");
    const collections = await api("GET", "/v1/collections");
    fillSelect("model", models.data.map((m) => m.id));
    fillSelect("collection", collections.data.map((c) => c.name));
    fillSelect("image-collection", collections.data.filter((c) => c.images).map((c) => c.name));
    setStatus("server-status", `${models.data.length} model(s), ${collections.data.length} collection(s) served`);
    document.body.dataset.ready = "true";
  } catch (error) {
    const hint = /API key/i.test(error.message) ? " (enter it above)" : "";
    setStatus("server-status", error.message + hint, true);
  }
}

// -- tabs --------------------------------------------------------------------------------------------
for (const button of document.querySelectorAll("nav button")) {
  button.addEventListener("click", () => {
    for (const other of document.querySelectorAll("nav button")) other.classList.toggle("active", other === button);
    for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.id === "tab-" + button.dataset.tab);
  });
}

// -- search ------------------------------------------------------------------------------------------
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function highlighted(text, terms) {
  const fragment = document.createDocumentFragment();
  const usable = terms.filter((t) => t.length > 0).sort((a, b) => b.length - a.length);
  if (usable.length === 0) {
    fragment.append(text);
    return fragment;
  }
  const pattern = new RegExp(usable.map(escapeRegExp).join("|"), "giu");
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) fragment.append(text.slice(last, match.index));
    const mark = document.createElement("mark");
    mark.textContent = match[0];
    fragment.append(mark);
    last = match.index + match[0].length;
  }
  fragment.append(text.slice(last));
  return fragment;
}

// The BM25 tokens of a text as the collection's analysis reads them (the query, or a hit's passage
// as a stored document): each with its part of speech and the rule that made it, the terms a hit
// matched marked.
let analysisTurn = 0;  // a later request's answer is the one shown

async function showAnalysis(text, asDocument, title, matched) {
  const turn = ++analysisTurn;
  const collection = $("collection").value;
  const panel = $("analysis");
  panel.hidden = false;
  panel.dataset.rendered = "";
  $("analysis-of").textContent = title;
  $("analysis-tokens").replaceChildren();
  setStatus("analysis-status", "analysing…");
  try {
    const path = `/v1/collections/${encodeURIComponent(collection)}/analyze`;
    const result = await api("POST", path, { text, document: asDocument });
    if (turn !== analysisTurn) return;
    const rows = result.tokens.map((t) => {
      const row = document.createElement("li");
      row.classList.toggle("matched", matched.has(t.token));
      for (const [name, value] of [["token", t.token], ["tag", t.tag], ["rule", t.rule]]) {
        const cell = document.createElement("span");
        cell.className = name;
        cell.textContent = value;
        row.append(cell);
      }
      return row;
    });
    $("analysis-tokens").replaceChildren(...rows);
    panel.dataset.rendered = String(rows.length);
    setStatus("analysis-status", `${rows.length} token(s)${matched.size ? "; marked: matched by a hit" : ""}`);
  } catch (error) {
    if (turn !== analysisTurn) return;
    panel.dataset.rendered = "0";
    setStatus("analysis-status", error.message, true);
  }
}

function renderResults(hits) {
  const list = $("results");
  list.replaceChildren();
  for (const hit of hits) {
    const item = document.createElement("li");
    item.className = "result";
    const text = document.createElement("div");
    text.className = "result-text";
    text.append(highlighted(hit.text, hit.matched_terms || []));
    const meta = document.createElement("div");
    meta.className = "result-meta";
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = hit.score.toFixed(3);
    meta.append(score);
    for (const [stage, value] of Object.entries(hit.scores || {})) {
      if (stage === "fused") continue;
      const part = document.createElement("span");
      part.textContent = `${stage} ${value.toFixed(3)}`;
      meta.append(part);
    }
    for (const term of hit.matched_terms || []) {
      const chip = document.createElement("span");
      chip.className = "term";
      chip.textContent = term;
      meta.append(chip);
    }
    const id = document.createElement("span");
    id.textContent = hit.id;
    meta.append(id);
    const analyze = document.createElement("button");
    analyze.type = "button";
    analyze.className = "analyze-hit";
    analyze.textContent = "analysis";
    analyze.title = "how BM25 reads this passage";
    const own = new Set(hit.matched_terms || []);
    analyze.addEventListener("click", () => showAnalysis(hit.text, true, `passage of ${hit.id}`, own));
    meta.append(analyze);
    const place = hit.location || {};
    if (place.label || place.heading) {
      const located = document.createElement("span");
      located.className = "location";
      located.textContent = [place.label, place.heading].filter(Boolean).join(" · ");
      meta.append(located);
    }
    if (hit.passage && hit.passage.partial) {
      const where = document.createElement("span");
      where.className = "passage";
      where.textContent = `passage ${hit.passage.chunk + 1} · characters ${hit.passage.start}–${hit.passage.end}`;
      meta.append(where);
    }
    item.append(text, meta);
    list.append(item);
  }
}

$("search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const collection = $("collection").value;
  const query = $("query").value.trim();
  if (!collection) {
    setStatus("search-status", "no collection is served here (munjang serve --collection FOLDER, or --demo)", true);
    return;
  }
  if (!query) return;
  setStatus("search-status", "searching…");
  const started = performance.now();
  try {
    const body = { query, mode: $("mode").value, top_k: Number($("top-k").value) || 10 };
    const result = await api("POST", `/v1/collections/${encodeURIComponent(collection)}/search`, body);
    renderResults(result.data);
    const ms = Math.round(performance.now() - started);
    setStatus("search-status", `${result.data.length} results from ${collection} (${body.mode}) in ${ms} ms`);
    const matched = new Set(result.data.flatMap((hit) => hit.matched_terms || []));
    showAnalysis(query, false, `query: ${query}`, matched);
  } catch (error) {
    $("results").replaceChildren();
    $("analysis").hidden = true;
    setStatus("search-status", error.message, true);
  }
});

// -- canvases ----------------------------------------------------------------------------------------
function sizedContext(canvas, width, height) {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = width + "px";
  canvas.style.height = height + "px";
  const context = canvas.getContext("2d");
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  context.clearRect(0, 0, width, height);
  return context;
}

function truncate(text, length) {
  return text.length > length ? text.slice(0, length - 1) + "…" : text;
}

// -- similarity heatmap ------------------------------------------------------------------------------
function heatColor(value) {
  // white at 0, deep blue at 1; negative similarities shade towards red
  const t = Math.max(-1, Math.min(1, value));
  const [r, g, b] = t >= 0 ? [247 - 239 * t, 251 - 203 * t, 255 - 148 * t] : [247, 251 + 120 * t, 255 + 140 * t];
  return `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;
}

function drawHeatmap(labels, matrix) {
  const canvas = $("heatmap");
  const n = labels.length;
  const labelWidth = 280;
  const top = 30;
  const cell = Math.max(22, Math.min(64, Math.floor(440 / n)));
  const width = labelWidth + cell * n + 70;
  const height = top + cell * n + 20;
  const context = sizedContext(canvas, width, height);
  context.font = "12px system-ui, sans-serif";
  context.textBaseline = "middle";
  for (let i = 0; i < n; i++) {
    context.fillStyle = "#1d2330";
    context.textAlign = "right";
    context.fillText(`${i + 1}. ${truncate(labels[i], 36)}`, labelWidth - 8, top + cell * i + cell / 2);
    context.textAlign = "center";
    context.fillText(String(i + 1), labelWidth + cell * i + cell / 2, top / 2);
    for (let j = 0; j < n; j++) {
      const value = matrix[i][j];
      context.fillStyle = heatColor(value);
      context.fillRect(labelWidth + cell * j, top + cell * i, cell - 1, cell - 1);
      if (cell >= 30) {
        context.fillStyle = value > 0.55 ? "#ffffff" : "#1d2330";
        context.fillText(value.toFixed(2), labelWidth + cell * j + cell / 2, top + cell * i + cell / 2);
      }
    }
  }
  const barX = labelWidth + cell * n + 16;
  for (let k = 0; k <= 100; k++) {
    context.fillStyle = heatColor(1 - k / 100);
    context.fillRect(barX, top + (cell * n * k) / 101, 14, (cell * n) / 101 + 1);
  }
  context.fillStyle = "#667085";
  context.textAlign = "left";
  context.fillText("1.0", barX + 18, top + 6);
  context.fillText("0.0", barX + 18, top + cell * n - 6);
  canvas.dataset.cells = String(n * n);
  canvas.dataset.rendered = "true";
  canvas.onmousemove = (event) => {
    const box = canvas.getBoundingClientRect();
    const j = Math.floor((event.clientX - box.left - labelWidth) / cell);
    const i = Math.floor((event.clientY - box.top - top) / cell);
    canvas.title = i >= 0 && j >= 0 && i < n && j < n ? `${labels[i]}\n${labels[j]}\ncosine ${matrix[i][j].toFixed(4)}` : "";
  };
}

$("similarity-run").addEventListener("click", async () => {
  const sentences = $("sentences").value.split("\n").map((s) => s.trim()).filter((s) => s.length > 0);
  if (sentences.length < 2) {
    setStatus("similarity-status", "enter at least two sentences, one per line", true);
    return;
  }
  setStatus("similarity-status", "encoding…");
  try {
    const result = await api("POST", "/v1/embeddings", { model: $("model").value || undefined, input: sentences });
    const vectors = result.data.sort((a, b) => a.index - b.index).map((d) => {
      const norm = Math.hypot(...d.embedding) || 1;
      return d.embedding.map((x) => x / norm);
    });
    const matrix = vectors.map((u) => vectors.map((v) => u.reduce((sum, x, k) => sum + x * v[k], 0)));
    drawHeatmap(sentences, matrix);
    setStatus("similarity-status", `${sentences.length} sentences, ${result.usage.prompt_tokens} tokens, model ${result.model}`);
  } catch (error) {
    setStatus("similarity-status", error.message, true);
  }
});

// -- collection map ----------------------------------------------------------------------------------
function groupOf(point) {
  const metadata = point.metadata || {};
  return String(metadata.topic ?? metadata.category ?? metadata.lang ?? "document");
}

function drawMap(points, method) {
  const canvas = $("map");
  const width = 720;
  const height = 520;
  const pad = 20;
  const context = sizedContext(canvas, width, height);
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const sx = (width - 2 * pad) / (x1 - x0 || 1);
  const sy = (height - 2 * pad) / (y1 - y0 || 1);
  const groups = [...new Set(points.map(groupOf))];
  const colorOf = (group) => PALETTE[groups.indexOf(group) % PALETTE.length];
  mapState.points = points.map((p) => ({ ...p, sx: pad + (p.x - x0) * sx, sy: height - pad - (p.y - y0) * sy }));
  for (const p of mapState.points) {
    context.beginPath();
    context.arc(p.sx, p.sy, 5, 0, 2 * Math.PI);
    context.fillStyle = colorOf(groupOf(p));
    context.globalAlpha = 0.8;
    context.fill();
  }
  context.globalAlpha = 1;
  $("legend").replaceChildren(
    ...groups.map((group) => {
      const entry = document.createElement("span");
      entry.style.setProperty("--dot", colorOf(group));
      entry.textContent = group;
      return entry;
    }),
  );
  canvas.dataset.points = String(points.length);
  canvas.dataset.method = method;
}

$("map").addEventListener("mousemove", (event) => {
  const canvas = $("map");
  const tooltip = $("tooltip");
  const box = canvas.getBoundingClientRect();
  const x = event.clientX - box.left;
  const y = event.clientY - box.top;
  let best = null;
  let bestDistance = 100; // squared pixels: within 10 px
  for (const p of mapState.points) {
    const d = (p.sx - x) ** 2 + (p.sy - y) ** 2;
    if (d < bestDistance) [best, bestDistance] = [p, d];
  }
  if (!best) {
    tooltip.hidden = true;
    return;
  }
  tooltip.textContent = `${best.text} (${best.id})`;
  tooltip.style.left = Math.min(best.sx + 12, box.width - 200) + "px";
  tooltip.style.top = best.sy + 12 + "px";
  tooltip.hidden = false;
});

$("map").addEventListener("mouseleave", () => {
  $("tooltip").hidden = true;
});

$("map-run").addEventListener("click", async () => {
  const collection = $("collection").value;
  if (!collection) {
    setStatus("map-status", "no collection is served here (munjang serve --collection FOLDER, or --demo)", true);
    return;
  }
  setStatus("map-status", "projecting…");
  try {
    const body = { method: $("map-method").value, limit: Number($("map-limit").value) || 2000 };
    const result = await api("POST", `/v1/collections/${encodeURIComponent(collection)}/map`, body);
    if (result.points.length === 0) {
      setStatus("map-status", "the collection is empty", true);
      return;
    }
    drawMap(result.points, result.method);
    setStatus("map-status", `${result.points.length} documents of ${collection}, ${result.method.toUpperCase()}`);
  } catch (error) {
    setStatus("map-status", error.message, true);
  }
});

// -- image search ------------------------------------------------------------------------------------
const MAX_UPLOAD_BYTES = 8_000_000;
const imageState = { query: null };

function asDataURL(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(new Error("could not read the image"));
    reader.readAsDataURL(blob);
  });
}

async function thumbnail(collection, id) {
  // fetched with the API key, shown as a data: URL (the page's content policy allows no other)
  const headers = requestHeaders();
  delete headers["Content-Type"];
  const path = `/v1/collections/${encodeURIComponent(collection)}/images/${encodeURIComponent(id)}?thumbnail=160`;
  const response = await fetch(path, { headers });
  if (!response.ok) throw new Error(`image ${id}: HTTP ${response.status}`);
  return asDataURL(await response.blob());
}

async function renderImageResults(collection, hits) {
  const grid = $("image-results");
  grid.replaceChildren();
  grid.dataset.rendered = "0";
  const figures = hits.map((hit) => {
    const figure = document.createElement("figure");
    figure.dataset.id = hit.id;
    const image = document.createElement("img");
    image.alt = hit.text;
    const caption = document.createElement("figcaption");
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = hit.score.toFixed(3);
    caption.append(score, " ", hit.text);
    figure.append(image, caption);
    grid.append(figure);
    return thumbnail(collection, hit.id).then((url) => {
      image.src = url;
    });
  });
  const settled = await Promise.allSettled(figures);
  grid.dataset.rendered = String(settled.filter((s) => s.status === "fulfilled").length);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
}

$("image-file").addEventListener("change", async () => {
  const file = $("image-file").files[0];
  imageState.query = null;
  $("image-preview").hidden = true;
  if (!file) return;
  if (file.size > MAX_UPLOAD_BYTES) {
    setStatus("image-status", `${file.name} is over ${MAX_UPLOAD_BYTES / 1e6} MB`, true);
    return;
  }
  imageState.query = await asDataURL(file);
  $("image-preview").src = imageState.query;
  $("image-preview").hidden = false;
  $("image-query").value = "";
  setStatus("image-status", `searching by ${file.name}: press Search`);
});

$("image-query").addEventListener("input", () => {
  imageState.query = null;
  $("image-file").value = "";
  $("image-preview").hidden = true;
});

$("image-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const collection = $("image-collection").value;
  if (!collection) {
    setStatus("image-status", "no image collection is served here (munjang index add NAME FOLDER_OF_IMAGES)", true);
    return;
  }
  const text = $("image-query").value.trim();
  if (!imageState.query && !text) {
    setStatus("image-status", "type a description or choose an image", true);
    return;
  }
  const top_k = Number($("image-top-k").value) || 12;
  const body = imageState.query ? { image: imageState.query, top_k } : { query: text, mode: "dense", top_k };
  setStatus("image-status", "searching…");
  const started = performance.now();
  try {
    const result = await api("POST", `/v1/collections/${encodeURIComponent(collection)}/search`, body);
    await renderImageResults(collection, result.data);
    const ms = Math.round(performance.now() - started);
    const by = imageState.query ? "an image" : "text";
    setStatus("image-status", `${result.data.length} images from ${collection} by ${by} in ${ms} ms`);
  } catch (error) {
    setStatus("image-status", error.message, true);
  }
});

// -- start -------------------------------------------------------------------------------------------
$("api-key").value = sessionStorage.getItem("munjang-api-key") || "";
$("api-key").addEventListener("change", () => {
  sessionStorage.setItem("munjang-api-key", $("api-key").value.trim());
  loadServer();
});
loadServer();
