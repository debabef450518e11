// @ts-check
// The labelling form (annotate/web/label_form.py): every answer is given here, in the browser, with
// no server rerun; the answers reach the server on Submit (one trigger), a draft at most every
// DRAFT_MS and when the page is hidden. Model text arrives as inert HTML built by
// annotate/web/render.safe_html (everything escaped, a small fixed set of tags) and is the only
// markup set from data; every other string is set as text.
const DRAFT_MS = 4000;
const STATES = new WeakMap(); // parentElement -> state of the mounted pair
// The form's phases. idle: answering. sending: an event that leaves or saves the pair is on its
// way; every key and click is ignored until the server answers it. refused: the server (or the
// browser's own check) named missing answers; answering goes on. done: another pair's form has
// mounted; this one ignores everything.
const IDLE = "idle";
const SENDING = "sending";
const REFUSED = "refused";
const DONE = "done";
// Every event the form sends carries the next number; the server echoes the last one it acted
// on as `data.answered`, so a rerun that answers the event (whatever it shows) ends `sending`.
let lastSent = 0;
// Streamlit's value of `data-test-connection-state` on its app element while connected.
const CONNECTED = "CONNECTED";
// A Submit (or skip, back...) unanswered this long says so (the server may be waiting for its
// database, which it retries for up to 30 s, or the network may be slow: the page cannot tell,
// so it says only what it knows).
const SLOW_MS = 3000;
const SLOW =
  "Still saving: the server is taking longer than usual to answer. Your answers are kept; this page carries on by itself.";
const RECONNECTING =
  "Connection to the server lost: reconnecting… Your answers on this page are kept; it carries on by itself.";
/** @type {{ finish: () => void } | null} */
let live = null; // the state of the form that takes keys now

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name === "html")
      node.innerHTML = value; // only safe_html output
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

const kbd = (key) => el("kbd", { text: key });

function scrollToTop(host) {
  // Streamlit scrolls its own main container, not the window: reset every scrolled ancestor.
  for (let node = host; node; node = node.parentElement || node.getRootNode?.().host) {
    if (node.scrollTop) node.scrollTop = 0;
  }
  if (document.scrollingElement) document.scrollingElement.scrollTop = 0;
}

// Single-key shortcuts can be turned off (WCAG 2.1.4); the choice is kept per browser.
const SHORTCUTS_SETTING = "annotate-single-key-shortcuts";
function shortcutsOn() {
  try {
    return localStorage.getItem(SHORTCUTS_SETTING) !== "off";
  } catch {
    return true;
  }
}
/** @param {boolean} on */
function setShortcuts(on) {
  try {
    localStorage.setItem(SHORTCUTS_SETTING, on ? "on" : "off");
  } catch {
    /* storage off: the setting lasts for this page only */
  }
}

/** @param {string} token */
function storageKey(token) {
  return `annotate-form-${token}`;
}

/** @param {string} token */
function forget(token) {
  try {
    sessionStorage.removeItem(storageKey(token));
  } catch (_e) {
    /* storage off */
  }
}

/** @param {import("./form_contract").Component} component */
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const root = parentElement.querySelector(".form-root");
  if (!root) return undefined;
  let state = STATES.get(parentElement);
  if (state && state.token === data.token && root?.contains(state.box)) {
    if (!state.receive(data)) {
      state.attach();
      return state.detach;
    }
    // The server's stored answer replaces what this browser holds (another tab saved first).
    state.finish();
    forget(data.token);
  }
  if (data.reset) forget(data.token);
  if (live && live !== state) live.finish(); // a form Streamlit still shows for a moment
  state = mount(data, root, parentElement, setTriggerValue);
  STATES.set(parentElement, state);
  live = state;
  state.attach();
  return state.detach;
}

/**
 * @param {import("./form_contract").FormData} data
 * @param {Element} root
 * @param {import("./form_contract").Component["parentElement"]} parentElement
 * @param {import("./form_contract").Component["setTriggerValue"]} setTriggerValue
 */
function mount(data, root, parentElement, setTriggerValue) {
  const stored = storageKey(data.token);
  let saved = null;
  try {
    saved = JSON.parse(sessionStorage.getItem(stored) || "null");
  } catch (_e) {
    saved = null;
  }
  const form = structuredClone(saved || data.initial);
  form.ratings = form.ratings || {};
  form.aspects = form.aspects || {};
  const started = performance.now() - 1000 * (data.seconds_before || 0);
  const order = data.order; // [{field, name}] rating then aspect-score cells, in cursor order
  const cells = order.filter((r) => r.kind !== "slot" && r.kind !== "reason");
  let cursor = Math.max(
    0,
    cells.findIndex((c) => value(c) === null || value(c) === undefined),
  );
  if (cells.every((c) => value(c) !== null && value(c) !== undefined)) cursor = -1;
  let dirty = false,
    draftTimer = null;
  const state = {
    token: data.token,
    data,
    box: null,
    phase: IDLE,
    waitingFor: 0,
    answered: data.answered,
    session: data.session,
    /** @type {{ event: keyof import("./form_contract").Events, value: any } | null} sent, not yet answered */
    pending: null,
  };

  function value(cell) {
    if (cell.kind === "rating") return form.ratings[cell.field] ?? null;
    if (cell.kind === "aspect") return form.aspects[cell.field] ?? null;
    if (cell.kind === "slot") return form.slot ?? null;
    return form.reason ?? null;
  }

  // --- building the page ------------------------------------------------------------------
  root.replaceChildren();
  const box = el("div", { class: "form" });
  root.append(box);
  state.box = box;

  /** @type {Record<string, HTMLElement>} */
  const toggles = {}; // panel name -> the button that opens it (aria-expanded)
  /** @param {string} name @param {...(string | Node)} label */
  function toggleButton(name, ...label) {
    toggles[name] = el(
      "button",
      { class: "link", type: "button", "aria-expanded": "false", onclick: () => toggle(name) },
      ...label,
    );
    return toggles[name];
  }
  const fraction = data.progress.total ? Math.min(1, data.progress.done / data.progress.total) : 1;
  const bar = el(
    "div",
    { class: "bar" },
    el("div", { class: "progress", title: "progress" }, el("div", { style: `width:${(100 * fraction).toFixed(1)}%` })),
    el("span", { text: `${data.progress.done} of ${data.progress.total} pairs` }),
    el("span", { class: "spacer" }),
    toggleButton("history", "Earlier answers ", kbd("H")),
    data.guidelines_html ? toggleButton("guidelines", "Guidelines ", kbd("?")) : null,
    // A button that opens the sign-out page (which asks first), not a link: the page's
    // first link is then Streamlit's "Skip to main content", which keeps it a skip link for
    // tools that check landmarks (a link in this shadow root came first in their order).
    el("button", { class: "link", type: "button", onclick: () => location.assign(data.sign_out_url) }, "Sign out"),
  );
  box.append(bar);
  // The server's word on the last thing sent (saved, refused, nothing earlier, last pair left):
  // its own line, polite for news, assertive for a warning.
  const message = el("div", { class: "message hidden" });
  box.append(message);
  /** @param {string | null} text @param {"info" | "warning"} tone */
  function showMessage(text, tone) {
    message.textContent = text || "";
    message.dataset.tone = tone || "info";
    message.setAttribute("role", tone === "warning" ? "alert" : "status");
    message.classList.toggle("hidden", !text);
  }
  if (data.editing) {
    box.append(
      el("div", {
        class: "notice",
        role: "status",
        text: "You are changing an answer you already gave. Saving replaces it.",
      }),
    );
  }

  const panels = {};
  function panel(name, title, ...content) {
    panels[name] = el("div", { class: "panel hidden", "data-panel": name }, el("h3", { text: title }), ...content);
    return panels[name];
  }
  if (data.guidelines_html)
    box.append(panel("guidelines", "Guidelines", el("div", { class: "text", html: data.guidelines_html })));
  const historyList = el("ol", { class: "history", reversed: true });
  box.append(panel("history", "Earlier answers (open one to change it)", historyList));

  box.append(
    el("div", { class: "question", "data-part": "question" }, el("div", { class: "text", html: data.question_html })),
  );

  const rubric = el("div", { class: "rubric", "data-part": "rubric" });
  if (data.aspects.length) {
    rubric.append(el("span", { class: "label", text: "What this user expects:" }));
    data.aspects.forEach((a, i) => {
      rubric.append(
        el(
          "span",
          { class: "aspect" },
          el("span", { class: "n", text: `${i + 1}.` }),
          el("span", { html: a.title_html }),
        ),
      );
    });
  }
  rubric.append(toggleButton("details", "Details ", kbd("D")));
  if (data.narrative_html) rubric.append(toggleButton("narrative", "In the user's words ", kbd("W")));
  if (data.posts_count) rubric.append(toggleButton("posts", `Past posts (${data.posts_count}) `, kbd("V")));
  box.append(rubric);
  box.append(
    panel(
      "details",
      "What this user expects, and why",
      ...data.aspects.map((a, i) =>
        el(
          "div",
          { class: "detail" },
          el("strong", {}, `${i + 1}. `, el("span", { html: a.title_html })),
          a.reason_html ? el("div", {}, "Why: ", el("span", { html: a.reason_html })) : null,
          a.evidence_html ? el("div", { class: "muted" }, "Evidence: ", el("span", { html: a.evidence_html })) : null,
        ),
      ),
      data.aspects.length ? null : el("div", { class: "muted", text: "This pair lists no rubric aspects." }),
    ),
  );
  if (data.narrative_html)
    box.append(panel("narrative", "In the user's own words", el("div", { class: "text", html: data.narrative_html })));
  // Past posts (hundreds on real records) sit in a panel of their own, over the page's right
  // edge, scrolling inside: opening them never moves the responses. A word filters them.
  const postsBox = el("div", { class: "posts-list" });
  const postsCount = el("span", { class: "muted", role: "status" });
  const postsFilter = el("input", {
    type: "search",
    class: "posts-filter",
    "aria-label": "Filter past posts by word",
    placeholder: "Filter by word (Esc closes)",
  });
  postsFilter.addEventListener("input", filterPosts);
  postsFilter.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.stopPropagation();
      e.preventDefault();
      toggle("posts");
    }
  });
  if (data.posts_count) {
    box.append(
      panel(
        "posts",
        `The user's past posts (${data.posts_count})`,
        el("div", { class: "posts-tools" }, postsFilter, postsCount),
        postsBox,
      ),
    );
    panels.posts.classList.add("overlay");
    panels.posts.setAttribute("role", "region");
    panels.posts.setAttribute("aria-label", "The user's past posts");
  }
  function filterPosts() {
    const word = postsFilter.value.trim().toLowerCase();
    let shown = 0;
    for (const post of postsBox.children) {
      const hit = !word || (post.textContent || "").toLowerCase().includes(word);
      post.classList.toggle("hidden", !hit);
      if (hit) shown += 1;
    }
    postsCount.textContent = word
      ? `${shown} of ${postsBox.childElementCount} posts contain “${postsFilter.value.trim()}”`
      : `${postsBox.childElementCount} posts`;
  }

  const rows = {}; // field -> row element
  const responses = el("div", { class: "responses" });
  const responseBoxes = {};
  for (const slot of ["A", "B"]) {
    const scores = el("div", { class: "scores" });
    const resp = el(
      "section",
      { class: "response", "data-slot": slot, "aria-label": `Response ${slot}` },
      el("h2", {}, `Response ${slot} `, el("kbd", { text: slot, "aria-hidden": "true" })),
      el("div", { class: "text", html: data.responses[slot] }),
      scores,
    );
    let lastKind = null;
    for (const cell of cells.filter((c) => c.slot === slot)) {
      if (cell.kind !== lastKind) {
        scores.append(
          el("div", { class: "scores-lead", text: cell.kind === "rating" ? data.quality_lead : data.aspect_lead }),
        );
        lastKind = cell.kind;
      }
      const options = cell.kind === "rating" ? data.scale : [0, 1, 2];
      const row = el(
        "div",
        { class: "row", role: "radiogroup", "aria-label": cell.label, "data-field": cell.field },
        el("span", { class: "name", title: cell.help || "", text: cell.short }),
      );
      for (const v of options) {
        row.append(
          el("button", {
            class: "opt",
            type: "button",
            role: "radio",
            "aria-checked": "false",
            "data-value": String(v),
            title: cell.option_titles ? cell.option_titles[v] : "",
            text: String(v),
            onclick: () => {
              setCell(cells.indexOf(cell), v);
            },
          }),
        );
      }
      rows[cell.field] = row;
      scores.append(row);
    }
    responseBoxes[slot] = resp;
    responses.append(resp);
  }
  box.append(responses);

  const choice = el(
    "div",
    { class: "choice", role: "radiogroup", "aria-label": data.preference_question, "data-field": "slot" },
    el("span", { class: "lead", text: data.preference_question }),
  );
  const choiceButtons = {};
  for (const [value, label, key] of data.choices) {
    choiceButtons[value] = el(
      "button",
      { class: "opt", type: "button", role: "radio", "aria-checked": "false", onclick: () => setSlot(value) },
      `${label} `,
      kbd(key),
    );
    choice.append(choiceButtons[value]);
  }
  const reasons = el(
    "div",
    { class: "reasons", role: "radiogroup", "aria-label": data.reason_question, "data-field": "reason" },
    el("span", { class: "lead", text: data.reason_question }),
  );
  const reasonButtons = {};
  for (const [value, label, key] of data.reasons) {
    reasonButtons[value] = el(
      "button",
      {
        class: "opt",
        type: "button",
        role: "radio",
        "aria-checked": "false",
        title: label,
        onclick: () => setReason(value),
      },
      `${label.split(":")[0]} `,
      kbd(key),
    );
    reasons.append(reasonButtons[value]);
  }
  box.append(el("div", { class: "actions" }, choice, data.reasons.length ? reasons : null));

  const comment = el("textarea", {
    "aria-label": "Comment (optional)",
    placeholder: "Comment (optional) — press C to type, Esc to leave",
    maxlength: "4000",
  });
  comment.value = form.comment || "";
  comment.addEventListener("input", () => {
    form.comment = comment.value;
    changed();
  });
  comment.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      comment.blur();
      e.stopPropagation();
    }
  });
  const refused = el("div", { class: "refused hidden", role: "alert" });
  const submitButton = el(
    "button",
    { class: "submit", type: "button", onclick: () => submit() },
    `${data.editing ? "Save change" : "Submit"} `,
    kbd("S"),
  );
  const secondButton = data.editing
    ? el("button", { class: "secondary", type: "button", onclick: () => leave("cancel") }, "Cancel ", kbd("K"))
    : el("button", { class: "secondary", type: "button", onclick: () => leave("skip") }, "Skip for now ", kbd("K"));
  // Only where a previous pair exists (the server's rule: earlier answers, gold checks left out).
  const backButton = data.can_go_back
    ? el("button", { class: "secondary", type: "button", onclick: () => leave("back") }, "Previous pair ", kbd("⌫"))
    : null;
  box.append(
    el(
      "div",
      { class: "bottom" },
      comment,
      el("div", { class: "actions buttons" }, submitButton, secondButton, backButton),
    ),
  );
  box.append(refused); // right under Submit, across the page

  const legend = el("div", { class: "legend" });
  // Only keys that act on this pair: no digits when the study rates nothing, no W or V
  // without the user's words or posts.
  /** @type {(string | null)[][]} */
  const legendItems = [["A", "B", data.allow_ties ? "N" : null, "choose"]];
  if (data.order.some((c) => c.kind === "rating"))
    legendItems.push(
      [`${data.scale[0]}–${data.scale[data.scale.length - 1]}`, "rate at the cursor"],
      ["⇧←", "⇧→", "move the cursor"],
    );
  if (data.aspect_check) legendItems.push(["0–2", "aspect scores"]);
  if (data.reasons.length) legendItems.push([...data.reasons.map((r) => r[2]), "main reason"]);
  /** @type {[string, string][]} */
  const panelKeys = [["D", "details"]];
  if (data.narrative_html) panelKeys.push(["W", "own words"]);
  if (data.posts_count) panelKeys.push(["V", "posts"]);
  panelKeys.push(["H", "earlier answers"]);
  legendItems.push(
    ["C", "comment (Esc leaves it)"],
    ["S", data.editing ? "save" : "submit"],
    ["K", data.editing ? "cancel" : "skip"],
  );
  if (data.can_go_back) legendItems.push(["⌫", "previous pair"]);
  legendItems.push([...panelKeys.map((k) => k[0]), `${panelKeys.map((k) => k[1]).join(", ")} (Esc closes)`]);
  legend.append("Keys: ");
  legendItems.forEach((item, i) => {
    for (const k of item.slice(0, -1)) if (k) legend.append(kbd(k), " ");
    legend.append(`${item[item.length - 1]}${i < legendItems.length - 1 ? " · " : ""}`);
  });
  const shortcutsBox = el("input", { type: "checkbox", class: "shortcuts" });
  shortcutsBox.checked = shortcutsOn();
  shortcutsBox.addEventListener("change", () => setShortcuts(shortcutsBox.checked));
  legend.append(" ", el("label", { class: "setting" }, shortcutsBox, " single-key shortcuts"));
  box.append(legend);

  // --- showing the form state ---------------------------------------------------------------
  function paint() {
    for (const [v, b] of Object.entries(choiceButtons)) {
      b.classList.toggle("on", form.slot === v);
      b.setAttribute("aria-checked", String(form.slot === v));
    }
    for (const slot of ["A", "B"]) responseBoxes[slot].classList.toggle("picked", form.slot === slot);
    for (const [v, b] of Object.entries(reasonButtons)) {
      b.classList.toggle("on", form.reason === v);
      b.setAttribute("aria-checked", String(form.reason === v));
    }
    cells.forEach((cell, i) => {
      const row = rows[cell.field];
      row.classList.toggle("cursor", i === cursor);
      const current = value(cell);
      for (const b of row.querySelectorAll(".opt")) {
        const on = current !== null && String(current) === b.dataset.value;
        b.classList.toggle("on", on);
        b.setAttribute("aria-checked", String(on));
      }
    });
    // One tab stop per radio group: the checked radio, else the first (arrow keys move).
    for (const group of box.querySelectorAll('[role="radiogroup"]')) {
      const radios = [...group.querySelectorAll('[role="radio"]')];
      const stop = radios.find((r) => r.getAttribute("aria-checked") === "true") || radios[0];
      for (const r of radios) r.setAttribute("tabindex", r === stop ? "0" : "-1");
    }
    if (!refused.classList.contains("hidden")) showRefused(missing(), false);
  }

  function missing() {
    return order.filter((r) => value(r) === null || value(r) === undefined).map((r) => r.name_field);
  }

  function showRefused(fields, scroll = true) {
    // `fields` are fields (from the browser) or names (from the server's own check).
    const byField = Object.fromEntries(order.map((r) => [r.name_field, r]));
    const named = fields.map((f) => (byField[f] ? byField[f].name : f));
    for (const node of box.querySelectorAll(".missing, .first-missing"))
      node.classList.remove("missing", "first-missing");
    if (!named.length) {
      refused.classList.add("hidden");
      return;
    }
    refused.textContent = `Please answer before submitting: ${named.join("; ")}.`;
    refused.classList.remove("hidden");
    fields.forEach((f, i) => {
      const r = byField[f];
      if (!r) return;
      const node = r.kind === "slot" ? choice : r.kind === "reason" ? reasons : rows[r.field];
      node.classList.add("missing");
      if (i === 0) node.classList.add("first-missing");
    });
    if (scroll) {
      const rect = refused.getBoundingClientRect();
      if (rect.top < 0 || rect.bottom > window.innerHeight) refused.scrollIntoView({ block: "nearest" });
    }
  }

  // --- the state machine ------------------------------------------------------------------------
  function enter(phase) {
    state.phase = phase;
    box.dataset.phase = phase;
    box.classList.toggle("saving", phase === SENDING);
    box.setAttribute("aria-busy", String(phase === SENDING));
    comment.readOnly = phase === SENDING || phase === DONE;
  }
  const acting = () => state.phase === IDLE || state.phase === REFUSED;

  /** Send an event that saves or leaves the pair: nothing more is taken until the answer. */
  function sendAndWait(event, value) {
    if (!acting()) return;
    clearTimeout(draftTimer);
    draftTimer = null;
    lastSent += 1;
    state.waitingFor = lastSent;
    state.pending = { event, value: { ...value, seq: lastSent } };
    enter(SENDING);
    setTriggerValue(event, state.pending.value);
    const waiting = lastSent;
    setTimeout(() => {
      if (state.phase === SENDING && state.waitingFor === waiting && !offline) showMessage(SLOW, "warning");
    }, SLOW_MS);
  }

  /** A rerun for this same pair. Returns true when the server's stored answer must replace
   * the form (the caller mounts it afresh); otherwise updates the form in place. */
  /** @param {import("./form_contract").FormData} next */
  state.receive = (next) => {
    state.data = next;
    renderHistory();
    renderPosts();
    if (next.session !== state.session) {
      // Another server session draws the form: the replica that held the page stopped (or
      // forgot it) and the page reconnected to another. That session never saw the event
      // still unanswered, if any: send it again (a Submit is stored once whatever happens,
      // and a pair already stored would not be shown again).
      state.session = next.session;
      state.answered = next.answered;
      const lost = state.phase === SENDING ? state.pending : null;
      if (lost) setTimeout(() => setTriggerValue(lost.event, lost.value), 0);
      return false;
    }
    const answered = next.answered;
    if (answered === null || answered === undefined || answered === state.answered) return false;
    state.answered = answered;
    if (next.reset) return true;
    showMessage(next.flash, next.flash_tone);
    if (next.refused?.length) {
      enter(REFUSED);
      showRefused(next.refused);
      remember();
    } else if (state.phase === SENDING && answered >= state.waitingFor) {
      state.pending = null;
      enter(IDLE);
    }
    return false;
  };
  state.finish = () => {
    clearTimeout(draftTimer);
    draftTimer = null;
    enter(DONE);
    state.detach();
  };

  // --- answering ------------------------------------------------------------------------------
  function remember() {
    try {
      sessionStorage.setItem(stored, JSON.stringify(form));
    } catch (_e) {
      /* full or off */
    }
  }
  function changed() {
    dirty = true;
    remember();
    if (!data.editing && !draftTimer) draftTimer = setTimeout(sendDraft, DRAFT_MS);
  }
  /** The draft of a new pair's answers so far (at most every DRAFT_MS and when the page is
   * hidden); it neither locks the form nor waits for an answer. */
  function sendDraft(away = false) {
    clearTimeout(draftTimer);
    draftTimer = null;
    if (data.editing || !acting()) return;
    if (!dirty) {
      // nothing new to keep, but the pair's lease: a page going away says so
      if (away) post({ away: true });
      return;
    }
    dirty = false;
    // A plain request (annotate/web/drafts.py), not a page run; the page's event if it fails.
    const viaPage = () => setTriggerValue("draft", { form, seconds: elapsed() });
    if (!data.draft) return viaPage();
    post({ form, seconds: elapsed(), away }).then((r) => {
      if (!r?.ok) viaPage();
    });
  }
  /** A request to the draft address with this assignment's key (annotate/web/drafts.py);
   * resolves to the response, or null when it could not be sent. */
  function post(fields) {
    if (!data.draft) return Promise.resolve(null);
    const { url, assignment, key } = data.draft;
    return fetch(url, {
      method: "POST",
      body: JSON.stringify({ assignment, key, ...fields }),
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      keepalive: true,
    }).catch(() => null);
  }
  /** The page is shown again after it went away: the pair's lease goes on, or the server
   * says the pair was given to someone else meanwhile (the answers stay in the form). */
  function sayBack() {
    if (data.editing || !acting()) return;
    post({ back: true }).then(async (r) => {
      if (r?.status !== 409) return;
      const reply = await r.json().catch(() => null);
      if (typeof reply?.message === "string") showMessage(reply.message, "warning");
    });
  }
  function elapsed() {
    return Math.round((performance.now() - started) / 100) / 10;
  }
  function setSlot(v) {
    if (!acting()) return;
    form.slot = v;
    changed();
    paint();
  }
  function setReason(v) {
    if (!acting()) return;
    form.reason = v;
    changed();
    paint();
  }
  function setCell(index, v) {
    if (!acting()) return;
    const cell = cells[index];
    if (cell.kind === "rating") form.ratings[cell.field] = v;
    else form.aspects[cell.field] = v;
    cursor = index + 1 < cells.length ? index + 1 : -1;
    changed();
    paint();
    followCursor();
  }
  /** The page follows the digit cursor: its row (or the choice, after the last) stays in view. */
  function followCursor() {
    const next = cursor >= 0 ? rows[cells[cursor].field] : choice;
    const rect = next.getBoundingClientRect();
    if (rect.top < 0 || rect.bottom > window.innerHeight) next.scrollIntoView({ block: "center" });
  }
  /** @param {number} step */
  function moveCursor(step) {
    if (!acting() || !cells.length) return;
    const from = cursor < 0 ? cells.length : cursor;
    cursor = Math.min(cells.length - 1, Math.max(0, from + step));
    paint();
    followCursor();
  }
  function submit() {
    if (!acting()) return;
    const left = missing();
    if (left.length) {
      enter(REFUSED);
      showRefused(left);
      const firstCell = cells.findIndex((c) => c.name_field === left[0]);
      if (firstCell >= 0) {
        cursor = firstCell;
        paint();
      }
      return;
    }
    // Saved answers are the server's from here on: a refusal stores them again (receive).
    forget(data.token);
    sendAndWait("submit", { form, seconds: elapsed() });
  }
  /** Skip, cancel, back or open another pair. Leaving an edit drops its unsaved change. */
  function leave(event, extra = {}) {
    if (!acting()) return;
    if (event === "back" && !state.data.can_go_back) {
      showMessage(state.data.no_earlier, "info"); // not silently: Backspace was heard
      return;
    }
    if (data.editing) forget(data.token);
    const value = event === "cancel" || event === "open" ? extra : { form, seconds: elapsed() };
    sendAndWait(event, value);
  }
  function toggle(name) {
    const p = panels[name];
    if (!p) return;
    p.classList.toggle("hidden");
    toggles[name]?.setAttribute("aria-expanded", String(!p.classList.contains("hidden")));
    if (name === "posts" && !postsBox.childElementCount) {
      if (state.data.posts) renderPosts();
      else {
        postsCount.textContent = "Loading the posts…";
        setTriggerValue("posts", true);
      }
    }
    if (name === "history" && !p.classList.contains("hidden") && state.data.history === null)
      setTriggerValue("history", true);
    if (!p.classList.contains("hidden")) {
      if (name === "posts") {
        postsFilter.focus({ preventScroll: true });
        return;
      }
      p.scrollIntoView({ block: "nearest" });
      // Keyboard users go on from the panel: Tab reaches its first link, not the page's top.
      p.tabIndex = -1;
      p.focus({ preventScroll: true });
    } else {
      leavePanel(p);
    }
  }
  function leavePanel(p) {
    const focused = p.getRootNode().activeElement;
    if (focused && (focused === p || p.contains(focused))) focused.blur();
  }
  function renderHistory() {
    const items = state.data.history;
    if (!items) return;
    historyList.replaceChildren();
    if (!items.length) historyList.append(el("li", { class: "muted", text: state.data.history_empty }));
    for (const h of items) {
      historyList.append(
        el(
          "li",
          {},
          el(
            "button",
            { class: "link", type: "button", onclick: () => leave("open", { pair_id: h.pair_id }) },
            el("span", { text: h.question }),
            " — ",
            el("strong", { text: h.answer }),
          ),
        ),
      );
    }
  }
  state.renderHistory = renderHistory;
  /** The past posts, once the server sent them (they are asked for when the panel opens). */
  function renderPosts() {
    const posts = state.data.posts;
    if (!posts || postsBox.childElementCount) return;
    for (const post of posts)
      postsBox.append(
        el(
          "div",
          { class: "post" },
          post.category ? el("div", { class: "muted", text: post.category }) : null,
          el("div", { class: "text", html: post.html }),
        ),
      );
    filterPosts();
  }

  const keyActions = {
    a: () => setSlot("A"),
    b: () => setSlot("B"),
    c: () => comment.focus(),
    s: () => submit(),
    k: () => leave(data.editing ? "cancel" : "skip"),
    d: () => toggle("details"),
    w: () => toggle("narrative"),
    v: () => toggle("posts"),
    h: () => toggle("history"),
    "?": () => toggle("guidelines"),
    backspace: () => leave("back"),
    escape: () => {
      for (const [name, p] of Object.entries(panels)) {
        p.classList.add("hidden");
        toggles[name]?.setAttribute("aria-expanded", "false");
        leavePanel(p);
      }
    },
  };
  if (data.allow_ties) keyActions.n = () => setSlot("tie");
  for (const [value, , key] of data.reasons) keyActions[key.toLowerCase()] = () => setReason(value);

  function onKey(e) {
    if (state.phase === DONE) return;
    if (state.phase === SENDING) {
      // keys wait for the server's answer: none is applied now or later
      if (!e.ctrlKey && !e.metaKey && !e.altKey) e.preventDefault();
      return;
    }
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const target = e.composedPath()[0];
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.isContentEditable)) return;
    if (document.querySelector('[role="dialog"]')) return;
    const key = e.key.toLowerCase();
    if (e.shiftKey && (key === "arrowleft" || key === "arrowright") && shortcutsOn()) {
      // Shift+arrows move the digit cursor over the ratings, filled or not, wherever the focus
      // is (plain arrows stay the radio groups' own): an earlier rating is changed by keys.
      e.preventDefault();
      moveCursor(key === "arrowright" ? 1 : -1);
      return;
    }
    if (key.startsWith("arrow") && target?.getAttribute?.("role") === "radio") {
      moveInGroup(target, key === "arrowright" || key === "arrowdown" ? 1 : -1);
      e.preventDefault();
      return;
    }
    if (key !== "escape" && !shortcutsOn()) return; // Tab, arrows, Space and Enter only
    if (/^[0-9]$/.test(key)) {
      if (cursor < 0) return;
      const cell = cells[cursor];
      const v = Number(key);
      const allowed = cell.kind === "rating" ? data.scale : [0, 1, 2];
      if (!allowed.includes(v)) return;
      e.preventDefault();
      setCell(cursor, v);
      return;
    }
    const action = keyActions[key];
    if (!action) return;
    e.preventDefault();
    action();
  }
  /** The ARIA radio pattern: an arrow key checks and focuses the next radio of the group. */
  function moveInGroup(radio, step) {
    const group = radio.closest('[role="radiogroup"]');
    if (!group) return;
    const radios = [...group.querySelectorAll('[role="radio"]')];
    const next = radios[(radios.indexOf(radio) + step + radios.length) % radios.length];
    if (next instanceof HTMLElement) {
      next.click();
      next.focus();
    }
  }
  function onHidden() {
    if (document.visibilityState === "hidden") sendDraft(true);
    else sayBack();
  }
  function onPageHide() {
    sendDraft(true);
  }
  // The page's connection to the server (Streamlit marks it on its app element). While it is
  // down the form says so and keeps every answer; back up, an event still unanswered is sent
  // again: Streamlit drops what is sent while disconnected, and after a reconnect to another
  // replica it does not rerun the page by itself. The server acts on one number once.
  const app = document.querySelector('[data-testid="stApp"]');
  let offline = false;
  function onConnection() {
    // The browser's own word counts too: gone offline, Streamlit may still call its socket
    // connected for a while, and a Submit then waits for nothing.
    const connected = navigator.onLine && (app?.getAttribute("data-test-connection-state") || CONNECTED) === CONNECTED;
    if (!connected && !offline) {
      offline = true;
      showMessage(RECONNECTING, "warning");
    } else if (connected && offline) {
      offline = false;
      showMessage(state.data.flash, state.data.flash_tone);
      if (state.phase === SENDING && state.pending) {
        const { event, value } = state.pending;
        setTriggerValue(event, value);
      }
    }
  }
  const watch = new MutationObserver(onConnection);
  // Listeners live while the component is mounted; a rerun with the same pair keeps the state.
  let attached = false;
  state.attach = () => {
    if (attached) return;
    attached = true;
    document.addEventListener("keydown", onKey);
    document.addEventListener("visibilitychange", onHidden);
    window.addEventListener("pagehide", onPageHide);
    window.addEventListener("offline", onConnection);
    window.addEventListener("online", onConnection);
    if (app) watch.observe(app, { attributes: true, attributeFilter: ["data-test-connection-state"] });
  };
  state.detach = () => {
    if (!attached) return;
    attached = false;
    document.removeEventListener("keydown", onKey);
    document.removeEventListener("visibilitychange", onHidden);
    window.removeEventListener("pagehide", onPageHide);
    window.removeEventListener("offline", onConnection);
    window.removeEventListener("online", onConnection);
    watch.disconnect();
  };

  renderHistory();
  paint();
  enter(IDLE);
  showMessage(data.flash, data.flash_tone);
  if (data.draft?.away) sayBack(); // shown again after the page said it went away
  if (data.refused?.length) {
    enter(REFUSED);
    showRefused(data.refused);
  }
  // Arrival: the new pair at its top, the keyboard live, and the focus on the form's first
  // answer (Tab goes on through the answers, in reading order).
  const first = box.querySelector('[role="radiogroup"] [tabindex="0"]');
  if (first instanceof HTMLElement) first.focus({ preventScroll: true });
  else if (document.activeElement instanceof HTMLElement && document.activeElement !== document.body)
    document.activeElement.blur();
  requestAnimationFrame(() => scrollToTop(parentElement instanceof ShadowRoot ? parentElement.host : root));
  return state;
}
