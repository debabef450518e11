// @ts-check
// The labelling form (annotate/web/label_form.py): every answer is given here, in the browser, with
// no server rerun; the answers reach the server on Submit (one trigger), a draft at most every
// DRAFT_MS and when the page is hidden. Model text arrives as inert HTML built by
// annotate/web/render.safe_html (everything escaped, a small fixed set of tags) and is the only
// markup set from data; every other string is set as text.
//
// One file, inlined by label_form.py (no build step), in parts that each do one job:
//   the entry point: which pair's form is mounted, and when a rerun only updates it;
//   mount: ties the parts below together for one pair;
//   state: the pair's answers, the digit cursor and the form's phase;
//   rendering: the page built once per pair, and painted from the state;
//   keys: what each key does;
//   drafts: the answers kept in this tab, and sent to the server as drafts;
//   connection: the page's connection to the server, read from Streamlit's app element.
// Streamlit's own page structure is never named here: the server sends it (data.dom, from
// annotate/web/streamlit_dom.py, the one place the app names it).

/** @typedef {import("./form_contract").FormData} FormData */
/** @typedef {import("./form_contract").Cell} Cell */
/** @typedef {import("./form_contract").Form} Form */
/** @typedef {import("./form_contract").Events} Events */
/** @typedef {import("./form_contract").Component} Component */
/** @typedef {"skip" | "cancel" | "back" | "open"} Leaving */

const DRAFT_MS = 4000;
/** @type {WeakMap<Component["parentElement"], State>} parentElement -> state of the mounted pair */
const STATES = new WeakMap();
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
// A Submit (or skip, back...) unanswered this long says so (the server may be waiting for its
// database, which it retries for up to 30 s, or the network may be slow: the page cannot tell,
// so it says only what it knows).
const SLOW_MS = 3000;
const SLOW =
  "Still saving: the server is taking longer than usual to answer. Your answers are kept; this page carries on by itself.";
const RECONNECTING =
  "Connection to the server lost: reconnecting… Your answers on this page are kept; it carries on by itself.";
/** @type {State | null} */
let live = null; // the state of the form that takes keys now

// --- small helpers -----------------------------------------------------------------------------

/** @typedef {string | number | boolean | null | undefined | EventListener} AttrValue */
/** @typedef {Node | string | null | undefined | false} Child */

/**
 * An element with attributes (`text`: its text, `html`: safe_html output only, `on...`: a
 * listener) and children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, AttrValue>} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = String(value);
    else if (name === "html")
      node.innerHTML = String(value); // only safe_html output
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(name, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

/** @param {string} key */
const kbd = (key) => el("kbd", { text: key });

/** @param {Element} host */
function scrollToTop(host) {
  // Streamlit scrolls its own main container, not the window: reset every scrolled ancestor.
  /** @type {Element | null | undefined} */
  let node = host;
  while (node) {
    if (node.scrollTop) node.scrollTop = 0;
    const root = node.getRootNode();
    node = node.parentElement || (root instanceof ShadowRoot ? root.host : null);
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

// --- the entry point ---------------------------------------------------------------------------

/** @param {Component} component */
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

// --- mount: one pair's form --------------------------------------------------------------------

/**
 * What the page's buttons and keys do (the answers, the events that leave the pair, panels).
 * @typedef {object} Actions
 * @property {(v: string) => void} setSlot
 * @property {(v: string) => void} setReason
 * @property {(index: number, v: number) => void} setCell
 * @property {() => void} changed  an answer changed (the comment's text, for one)
 * @property {() => void} submit
 * @property {(event: Leaving, extra?: { pair_id?: number }) => void} leave
 * @property {(name: string) => void} toggle
 */

/**
 * @param {FormData} data
 * @param {Element} root
 * @param {Component["parentElement"]} parentElement
 * @param {Component["setTriggerValue"]} setTriggerValue
 * @returns {State}
 */
function mount(data, root, parentElement, setTriggerValue) {
  const state = createState(data);
  const drafts = createDrafts(state, setTriggerValue);
  /** @type {Actions} */
  const act = {
    setSlot: (v) => {
      if (!acting(state)) return;
      state.form.slot = /** @type {Form["slot"]} */ (v);
      act.changed();
      paint(view, state);
    },
    setReason: (v) => {
      if (!acting(state)) return;
      state.form.reason = v;
      act.changed();
      paint(view, state);
    },
    setCell: (index, v) => {
      if (!acting(state)) return;
      const cell = state.cells[index];
      if (cell.kind === "rating") state.form.ratings[cell.field] = v;
      else state.form.aspects[cell.field] = v;
      state.cursor = index + 1 < state.cells.length ? index + 1 : -1;
      act.changed();
      paint(view, state);
      followCursor(view, state);
    },
    changed: () => drafts.changed(),
    submit: () => {
      if (!acting(state)) return;
      const left = missing(state);
      if (left.length) {
        enter(view, state, REFUSED);
        showRefused(view, state, left);
        const firstCell = state.cells.findIndex((c) => c.name_field === left[0]);
        if (firstCell >= 0) {
          state.cursor = firstCell;
          paint(view, state);
        }
        return;
      }
      // Saved answers are the server's from here on: a refusal stores them again (receive).
      forget(data.token);
      sendAndWait("submit", { form: state.form, seconds: elapsed(state) });
    },
    // Skip, cancel, back or open another pair. Leaving an edit drops its unsaved change.
    leave: (event, extra = {}) => {
      if (!acting(state)) return;
      if (event === "back" && !state.data.can_go_back) {
        showMessage(view, state.data.no_earlier, "info"); // not silently: Backspace was heard
        return;
      }
      if (data.editing) forget(data.token);
      const value = event === "cancel" || event === "open" ? extra : { form: state.form, seconds: elapsed(state) };
      sendAndWait(event, /** @type {any} */ (value));
    },
    toggle: (name) => togglePanel(view, state, name, setTriggerValue),
  };
  const view = buildView(data, root, state, act);
  state.box = view.box;

  /**
   * Send an event that saves or leaves the pair: nothing more is taken until the answer.
   * @param {keyof Events} event
   * @param {Record<string, unknown>} value
   */
  function sendAndWait(event, value) {
    if (!acting(state)) return;
    drafts.cancel();
    lastSent += 1;
    state.waitingFor = lastSent;
    state.pending = { event, value: { ...value, seq: lastSent } };
    enter(view, state, SENDING);
    setTriggerValue(event, /** @type {any} */ (state.pending.value));
    const waiting = lastSent;
    setTimeout(() => {
      if (state.phase === SENDING && state.waitingFor === waiting && !state.offline) showMessage(view, SLOW, "warning");
    }, SLOW_MS);
  }

  /* A rerun for this same pair. Returns true when the server's stored answer must replace
   * the form (the caller mounts it afresh); otherwise updates the form in place. */
  state.receive = (next) => {
    state.data = next;
    renderHistory(view, state, act);
    renderPosts(view, state);
    if (next.session !== state.session) {
      // Another server session draws the form: the replica that held the page stopped (or
      // forgot it) and the page reconnected to another. That session never saw the event
      // still unanswered, if any: send it again (a Submit is stored once whatever happens,
      // and a pair already stored would not be shown again).
      state.session = next.session;
      state.answered = next.answered;
      const lost = state.phase === SENDING ? state.pending : null;
      if (lost) setTimeout(() => setTriggerValue(lost.event, /** @type {any} */ (lost.value)), 0);
      return false;
    }
    const answered = next.answered;
    if (answered === null || answered === undefined || answered === state.answered) return false;
    state.answered = answered;
    if (next.reset) return true;
    showMessage(view, next.flash, next.flash_tone);
    if (next.refused?.length) {
      enter(view, state, REFUSED);
      showRefused(view, state, next.refused);
      drafts.remember();
    } else if (state.phase === SENDING && answered >= state.waitingFor) {
      state.pending = null;
      enter(view, state, IDLE);
    }
    return false;
  };
  state.finish = () => {
    drafts.cancel();
    enter(view, state, DONE);
    state.detach();
  };

  // Listeners live while the component is mounted; a rerun with the same pair keeps the state.
  const onKey = keyHandler(state, view, act);
  const connection = watchConnection(
    data,
    () => {
      showMessage(view, RECONNECTING, "warning");
    },
    () => {
      showMessage(view, state.data.flash, state.data.flash_tone);
      if (state.phase === SENDING && state.pending) {
        const { event, value } = state.pending;
        setTriggerValue(event, /** @type {any} */ (value));
      }
    },
    state,
  );
  function onHidden() {
    if (document.visibilityState === "hidden") drafts.sendDraft(true);
    else drafts.sayBack((text) => showMessage(view, text, "warning"));
  }
  function onPageHide() {
    drafts.sendDraft(true);
  }
  // While the page shows the pair it says so every few seconds: a page that stops saying it
  // (crashed, killed, cut off) gives its pair back (rule 8 of annotate/queue/rules.py).
  function onHeartbeat() {
    if (document.visibilityState !== "hidden") drafts.sayBack((text) => showMessage(view, text, "warning"));
  }
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let heartbeat;
  let attached = false;
  state.attach = () => {
    if (attached) return;
    attached = true;
    document.addEventListener("keydown", onKey);
    document.addEventListener("visibilitychange", onHidden);
    window.addEventListener("pagehide", onPageHide);
    if (data.draft?.heartbeat) heartbeat = setInterval(onHeartbeat, data.draft.heartbeat * 1000);
    connection.start();
  };
  state.detach = () => {
    if (!attached) return;
    attached = false;
    document.removeEventListener("keydown", onKey);
    document.removeEventListener("visibilitychange", onHidden);
    window.removeEventListener("pagehide", onPageHide);
    clearInterval(heartbeat);
    heartbeat = undefined;
    connection.stop();
  };

  renderHistory(view, state, act);
  paint(view, state);
  enter(view, state, IDLE);
  showMessage(view, data.flash, data.flash_tone);
  if (data.draft?.away) drafts.sayBack((text) => showMessage(view, text, "warning")); // shown again after it went away
  if (data.refused?.length) {
    enter(view, state, REFUSED);
    showRefused(view, state, data.refused);
  }
  // Arrival: the new pair at its top, the keyboard live, and the focus on the form's first
  // answer (Tab goes on through the answers, in reading order).
  const first = view.box.querySelector('[role="radiogroup"] [tabindex="0"]');
  if (first instanceof HTMLElement) first.focus({ preventScroll: true });
  else if (document.activeElement instanceof HTMLElement && document.activeElement !== document.body)
    document.activeElement.blur();
  requestAnimationFrame(() => scrollToTop(parentElement instanceof ShadowRoot ? parentElement.host : root));
  return state;
}

// --- state: the answers, the cursor, the phase -------------------------------------------------

/**
 * @typedef {object} State
 * @property {string} token  the pair's visit (FormData.token)
 * @property {FormData} data  the latest data for this pair (the history and posts come later)
 * @property {Form} form  the answers as the browser holds them
 * @property {Cell[]} cells  the rating, then aspect-score cells, in digit-cursor order
 * @property {number} cursor  the cell digits go to; -1: past the last
 * @property {number} started  when the pair was shown (performance.now), less earlier visits
 * @property {string} phase  IDLE, SENDING, REFUSED or DONE
 * @property {number} waitingFor  the number of the event on its way
 * @property {number | null} answered  the last event number the server acted on
 * @property {string | undefined} session  the server session that draws the form
 * @property {{ event: keyof Events, value: Record<string, unknown> } | null} pending  sent, not yet answered
 * @property {boolean} offline  the page's connection to the server is down
 * @property {HTMLElement | null} box  the form's element
 * @property {(next: FormData) => boolean} receive
 * @property {() => void} finish
 * @property {() => void} attach
 * @property {() => void} detach
 */

/**
 * The pair's state: the answers this tab kept (a reload), else the server's.
 * @param {FormData} data
 * @returns {State}
 */
function createState(data) {
  const saved = restore(data.token);
  /** @type {Form} */
  const form = structuredClone(saved || data.initial);
  form.ratings = form.ratings || {};
  form.aspects = form.aspects || {};
  const cells = data.order.filter((r) => r.kind !== "slot" && r.kind !== "reason");
  const noop = () => {};
  /** @type {State} */
  const state = {
    token: data.token,
    data,
    form,
    cells,
    cursor: -1,
    started: performance.now() - 1000 * (data.seconds_before || 0),
    phase: IDLE,
    waitingFor: 0,
    answered: data.answered,
    session: data.session,
    pending: null,
    offline: false,
    box: null,
    receive: () => false,
    finish: noop,
    attach: noop,
    detach: noop,
  };
  state.cursor = cells.findIndex((c) => answerOf(state, c) === null); // -1: every one answered
  return state;
}

/** @param {State} state @param {Cell} cell @returns {string | number | null} */
function answerOf(state, cell) {
  const { form } = state;
  if (cell.kind === "rating") return form.ratings[cell.field] ?? null;
  if (cell.kind === "aspect") return form.aspects[cell.field] ?? null;
  if (cell.kind === "slot") return form.slot ?? null;
  return form.reason ?? null;
}

/** The questions not answered yet, as `name_field`s. @param {State} state */
function missing(state) {
  return state.data.order.filter((r) => answerOf(state, r) === null).map((r) => r.name_field);
}

/** @param {State} state */
const acting = (state) => state.phase === IDLE || state.phase === REFUSED;

/** @param {State} state */
function elapsed(state) {
  return Math.round((performance.now() - state.started) / 100) / 10;
}

// --- rendering: the page, built once per pair --------------------------------------------------

/**
 * @typedef {object} View
 * @property {HTMLDivElement} box
 * @property {HTMLDivElement} message
 * @property {Record<string, HTMLElement>} panels  panel name -> panel
 * @property {Record<string, HTMLElement>} toggles  panel name -> the button that opens it
 * @property {Record<string, HTMLElement>} rows  cell field -> its row of options
 * @property {HTMLElement} choice
 * @property {Record<string, HTMLElement>} choiceButtons
 * @property {HTMLElement} reasons
 * @property {Record<string, HTMLElement>} reasonButtons
 * @property {Record<string, HTMLElement>} responseBoxes
 * @property {HTMLTextAreaElement} comment
 * @property {HTMLDivElement} refused
 * @property {HTMLOListElement} historyList
 * @property {HTMLDivElement} postsBox
 * @property {HTMLSpanElement} postsCount
 * @property {HTMLInputElement} postsFilter
 */

/**
 * @param {FormData} data
 * @param {Element} root
 * @param {State} state
 * @param {Actions} act
 * @returns {View}
 */
function buildView(data, root, state, act) {
  root.replaceChildren();
  const box = el("div", { class: "form" });
  root.append(box);

  /** @type {Record<string, HTMLElement>} */
  const toggles = {};
  /** @param {string} name @param {...Child} label */
  function toggleButton(name, ...label) {
    toggles[name] = el(
      "button",
      { class: "link", type: "button", "aria-expanded": "false", onclick: () => act.toggle(name) },
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
  if (data.editing) {
    box.append(
      el("div", {
        class: "notice",
        role: "status",
        text: "You are changing an answer you already gave. Saving replaces it.",
      }),
    );
  }

  /** @type {Record<string, HTMLElement>} */
  const panels = {};
  /** @param {string} name @param {string} title @param {...Child} content */
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
  postsFilter.addEventListener("input", () => filterPosts(view));
  postsFilter.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.stopPropagation();
      e.preventDefault();
      act.toggle("posts");
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

  /** @type {Record<string, HTMLElement>} */
  const rows = {}; // field -> row element
  const responses = el("div", { class: "responses" });
  /** @type {Record<string, HTMLElement>} */
  const responseBoxes = {};
  for (const slot of /** @type {const} */ (["A", "B"])) {
    const scores = el("div", { class: "scores" });
    const resp = el(
      "section",
      { class: "response", "data-slot": slot, "aria-label": `Response ${slot}` },
      el("h2", {}, `Response ${slot} `, el("kbd", { text: slot, "aria-hidden": "true" })),
      el("div", { class: "text", html: data.responses[slot] }),
      scores,
    );
    /** @type {string | null} */
    let lastKind = null;
    for (const cell of state.cells.filter((c) => c.slot === slot)) {
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
              act.setCell(state.cells.indexOf(cell), v);
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
  /** @type {Record<string, HTMLElement>} */
  const choiceButtons = {};
  for (const [value, label, key] of data.choices) {
    choiceButtons[value] = el(
      "button",
      { class: "opt", type: "button", role: "radio", "aria-checked": "false", onclick: () => act.setSlot(value) },
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
  /** @type {Record<string, HTMLElement>} */
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
        onclick: () => act.setReason(value),
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
  comment.value = state.form.comment || "";
  comment.addEventListener("input", () => {
    state.form.comment = comment.value;
    act.changed();
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
    { class: "submit", type: "button", onclick: () => act.submit() },
    `${data.editing ? "Save change" : "Submit"} `,
    kbd("S"),
  );
  const secondButton = data.editing
    ? el("button", { class: "secondary", type: "button", onclick: () => act.leave("cancel") }, "Cancel ", kbd("K"))
    : el("button", { class: "secondary", type: "button", onclick: () => act.leave("skip") }, "Skip for now ", kbd("K"));
  // Only where a previous pair exists (the server's rule: earlier answers, gold checks left out).
  const backButton = data.can_go_back
    ? el("button", { class: "secondary", type: "button", onclick: () => act.leave("back") }, "Previous pair ", kbd("⌫"))
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
  box.append(legendOf(data));

  /** @type {View} */
  const view = {
    box,
    message,
    panels,
    toggles,
    rows,
    choice,
    choiceButtons,
    reasons,
    reasonButtons,
    responseBoxes,
    comment,
    refused,
    historyList,
    postsBox,
    postsCount,
    postsFilter,
  };
  return view;
}

/** The keys that act on this pair, and the setting that turns single keys off. @param {FormData} data */
function legendOf(data) {
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
  return legend;
}

// --- rendering: the state shown ----------------------------------------------------------------

/** @param {View} view @param {State} state */
function paint(view, state) {
  const { form } = state;
  for (const [v, b] of Object.entries(view.choiceButtons)) {
    b.classList.toggle("on", form.slot === v);
    b.setAttribute("aria-checked", String(form.slot === v));
  }
  for (const slot of ["A", "B"]) view.responseBoxes[slot].classList.toggle("picked", form.slot === slot);
  for (const [v, b] of Object.entries(view.reasonButtons)) {
    b.classList.toggle("on", form.reason === v);
    b.setAttribute("aria-checked", String(form.reason === v));
  }
  state.cells.forEach((cell, i) => {
    const row = view.rows[cell.field];
    row.classList.toggle("cursor", i === state.cursor);
    const current = answerOf(state, cell);
    for (const b of row.querySelectorAll(".opt")) {
      const on = current !== null && b instanceof HTMLElement && String(current) === b.dataset.value;
      b.classList.toggle("on", on);
      b.setAttribute("aria-checked", String(on));
    }
  });
  // One tab stop per radio group: the checked radio, else the first (arrow keys move).
  for (const group of view.box.querySelectorAll('[role="radiogroup"]')) {
    const radios = [...group.querySelectorAll('[role="radio"]')];
    const stop = radios.find((r) => r.getAttribute("aria-checked") === "true") || radios[0];
    for (const r of radios) r.setAttribute("tabindex", r === stop ? "0" : "-1");
  }
  if (!view.refused.classList.contains("hidden")) showRefused(view, state, missing(state), false);
}

/**
 * The missing answers named under Submit, and marked where they are asked.
 * @param {View} view
 * @param {State} state
 * @param {string[]} fields  fields (from the browser) or names (from the server's own check)
 * @param {boolean} [scroll]
 */
function showRefused(view, state, fields, scroll = true) {
  const { order } = state.data;
  const byField = Object.fromEntries(order.map((r) => [r.name_field, r]));
  const named = fields.map((f) => (byField[f] ? byField[f].name : f));
  for (const node of view.box.querySelectorAll(".missing, .first-missing"))
    node.classList.remove("missing", "first-missing");
  if (!named.length) {
    view.refused.classList.add("hidden");
    return;
  }
  view.refused.textContent = `Please answer before submitting: ${named.join("; ")}.`;
  view.refused.classList.remove("hidden");
  fields.forEach((f, i) => {
    const r = byField[f];
    if (!r) return;
    const node = r.kind === "slot" ? view.choice : r.kind === "reason" ? view.reasons : view.rows[r.field];
    node.classList.add("missing");
    if (i === 0) node.classList.add("first-missing");
  });
  if (scroll) {
    const rect = view.refused.getBoundingClientRect();
    if (rect.top < 0 || rect.bottom > window.innerHeight) view.refused.scrollIntoView({ block: "nearest" });
  }
}

/** @param {View} view @param {string | null | undefined} text @param {"info" | "warning"} tone */
function showMessage(view, text, tone) {
  const { message } = view;
  message.textContent = text || "";
  message.dataset.tone = tone || "info";
  message.setAttribute("role", tone === "warning" ? "alert" : "status");
  message.classList.toggle("hidden", !text);
}

/** @param {View} view @param {State} state @param {string} phase */
function enter(view, state, phase) {
  state.phase = phase;
  view.box.dataset.phase = phase;
  view.box.classList.toggle("saving", phase === SENDING);
  view.box.setAttribute("aria-busy", String(phase === SENDING));
  view.comment.readOnly = phase === SENDING || phase === DONE;
}

/** The page follows the digit cursor: its row (or the choice, after the last) stays in view. @param {View} view @param {State} state */
function followCursor(view, state) {
  const next = state.cursor >= 0 ? view.rows[state.cells[state.cursor].field] : view.choice;
  const rect = next.getBoundingClientRect();
  if (rect.top < 0 || rect.bottom > window.innerHeight) next.scrollIntoView({ block: "center" });
}

/**
 * Open or close a panel; the posts and the earlier answers are asked for when first opened.
 * @param {View} view
 * @param {State} state
 * @param {string} name
 * @param {Component["setTriggerValue"]} setTriggerValue
 */
function togglePanel(view, state, name, setTriggerValue) {
  const p = view.panels[name];
  if (!p) return;
  p.classList.toggle("hidden");
  view.toggles[name]?.setAttribute("aria-expanded", String(!p.classList.contains("hidden")));
  if (name === "posts" && !view.postsBox.childElementCount) {
    if (state.data.posts) renderPosts(view, state);
    else {
      view.postsCount.textContent = "Loading the posts…";
      setTriggerValue("posts", true);
    }
  }
  if (name === "history" && !p.classList.contains("hidden") && state.data.history === null)
    setTriggerValue("history", true);
  if (!p.classList.contains("hidden")) {
    if (name === "posts") {
      view.postsFilter.focus({ preventScroll: true });
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

/** @param {HTMLElement} p */
function leavePanel(p) {
  const root = p.getRootNode();
  const focused = root instanceof Document || root instanceof ShadowRoot ? root.activeElement : null;
  if (focused instanceof HTMLElement && (focused === p || p.contains(focused))) focused.blur();
}

/** @param {View} view @param {State} state @param {Actions} act */
function renderHistory(view, state, act) {
  const items = state.data.history;
  if (!items) return;
  view.historyList.replaceChildren();
  if (!items.length) view.historyList.append(el("li", { class: "muted", text: state.data.history_empty }));
  for (const h of items) {
    view.historyList.append(
      el(
        "li",
        {},
        el(
          "button",
          { class: "link", type: "button", onclick: () => act.leave("open", { pair_id: h.pair_id }) },
          el("span", { text: h.question }),
          " — ",
          el("strong", { text: h.answer }),
        ),
      ),
    );
  }
}

/** The past posts, once the server sent them (they are asked for when the panel opens). @param {View} view @param {State} state */
function renderPosts(view, state) {
  const posts = state.data.posts;
  if (!posts || view.postsBox.childElementCount) return;
  for (const post of posts)
    view.postsBox.append(
      el(
        "div",
        { class: "post" },
        post.category ? el("div", { class: "muted", text: post.category }) : null,
        el("div", { class: "text", html: post.html }),
      ),
    );
  filterPosts(view);
}

/** @param {View} view */
function filterPosts(view) {
  const { postsBox, postsCount, postsFilter } = view;
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

// --- keys ----------------------------------------------------------------------------------------

/**
 * The document's keydown listener for this pair's form.
 * @param {State} state
 * @param {View} view
 * @param {Actions} act
 * @returns {(e: KeyboardEvent) => void}
 */
function keyHandler(state, view, act) {
  const { data } = state;
  /** @type {Record<string, () => void>} */
  const keyActions = {
    a: () => act.setSlot("A"),
    b: () => act.setSlot("B"),
    c: () => view.comment.focus(),
    s: () => act.submit(),
    k: () => act.leave(data.editing ? "cancel" : "skip"),
    d: () => act.toggle("details"),
    w: () => act.toggle("narrative"),
    v: () => act.toggle("posts"),
    h: () => act.toggle("history"),
    "?": () => act.toggle("guidelines"),
    backspace: () => act.leave("back"),
    escape: () => {
      for (const [name, p] of Object.entries(view.panels)) {
        p.classList.add("hidden");
        view.toggles[name]?.setAttribute("aria-expanded", "false");
        leavePanel(p);
      }
    },
  };
  if (data.allow_ties) keyActions.n = () => act.setSlot("tie");
  for (const [value, , key] of data.reasons) keyActions[key.toLowerCase()] = () => act.setReason(value);

  /** @param {number} step */
  function moveCursor(step) {
    if (!acting(state) || !state.cells.length) return;
    const from = state.cursor < 0 ? state.cells.length : state.cursor;
    state.cursor = Math.min(state.cells.length - 1, Math.max(0, from + step));
    paint(view, state);
    followCursor(view, state);
  }

  return (e) => {
    if (state.phase === DONE) return;
    if (state.phase === SENDING) {
      // keys wait for the server's answer: none is applied now or later
      if (!e.ctrlKey && !e.metaKey && !e.altKey) e.preventDefault();
      return;
    }
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const target = e.composedPath()[0];
    if (
      target instanceof HTMLElement &&
      (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.isContentEditable)
    )
      return;
    if (document.querySelector('[role="dialog"]')) return; // a dialog of the page has the keys
    const key = e.key.toLowerCase();
    if (e.shiftKey && (key === "arrowleft" || key === "arrowright") && shortcutsOn()) {
      // Shift+arrows move the digit cursor over the ratings, filled or not, wherever the focus
      // is (plain arrows stay the radio groups' own): an earlier rating is changed by keys.
      e.preventDefault();
      moveCursor(key === "arrowright" ? 1 : -1);
      return;
    }
    if (key.startsWith("arrow") && target instanceof HTMLElement && target.getAttribute("role") === "radio") {
      moveInGroup(target, key === "arrowright" || key === "arrowdown" ? 1 : -1);
      e.preventDefault();
      return;
    }
    if (key !== "escape" && !shortcutsOn()) return; // Tab, arrows, Space and Enter only
    if (/^[0-9]$/.test(key)) {
      if (state.cursor < 0) return;
      const cell = state.cells[state.cursor];
      const v = Number(key);
      const allowed = cell.kind === "rating" ? data.scale : [0, 1, 2];
      if (!allowed.includes(v)) return;
      e.preventDefault();
      act.setCell(state.cursor, v);
      return;
    }
    const action = keyActions[key];
    if (!action) return;
    e.preventDefault();
    action();
  };
}

/** The ARIA radio pattern: an arrow key checks and focuses the next radio of the group. @param {HTMLElement} radio @param {number} step */
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

// --- drafts: the answers kept in this tab and on the server ------------------------------------

/** @param {string} token */
function storageKey(token) {
  return `annotate-form-${token}`;
}

/** The answers this tab kept for the pair (a reload), or null. @param {string} token @returns {Form | null} */
function restore(token) {
  try {
    return JSON.parse(sessionStorage.getItem(storageKey(token)) || "null");
  } catch (_e) {
    return null;
  }
}

/** @param {string} token */
function forget(token) {
  try {
    sessionStorage.removeItem(storageKey(token));
  } catch (_e) {
    /* storage off */
  }
}

/**
 * @typedef {object} Drafts
 * @property {() => void} changed  an answer changed: keep it here, and send a draft soon
 * @property {() => void} remember  keep the answers in this tab
 * @property {(away?: boolean) => void} sendDraft
 * @property {(say: (text: string) => void) => void} sayBack
 * @property {() => void} cancel  no draft is due any more
 */

/**
 * @param {State} state
 * @param {Component["setTriggerValue"]} setTriggerValue
 * @returns {Drafts}
 */
function createDrafts(state, setTriggerValue) {
  const { data } = state;
  const stored = storageKey(data.token);
  let dirty = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let draftTimer;

  function remember() {
    try {
      sessionStorage.setItem(stored, JSON.stringify(state.form));
    } catch (_e) {
      /* full or off */
    }
  }
  function cancel() {
    clearTimeout(draftTimer);
    draftTimer = undefined;
  }
  function changed() {
    dirty = true;
    remember();
    if (!data.editing && !draftTimer) draftTimer = setTimeout(sendDraft, DRAFT_MS);
  }
  /** The draft of a new pair's answers so far (at most every DRAFT_MS and when the page is
   * hidden); it neither locks the form nor waits for an answer. @param {boolean} [away] */
  function sendDraft(away = false) {
    cancel();
    if (data.editing || !acting(state)) return;
    if (!dirty) {
      // nothing new to keep, but the pair's lease: a page going away says so
      if (away) post({ away: true });
      return;
    }
    dirty = false;
    // A plain request (annotate/web/drafts.py), not a page run; the page's event if it fails.
    const viaPage = () => setTriggerValue("draft", { form: state.form, seconds: elapsed(state) });
    if (!data.draft) return viaPage();
    post({ form: state.form, seconds: elapsed(state), away }).then((r) => {
      if (!r?.ok) viaPage();
    });
  }
  /** A request to the draft address with this assignment's handle and key (annotate/web/drafts.py);
   * resolves to the response, or null when it could not be sent. @param {Record<string, unknown>} fields */
  function post(fields) {
    if (!data.draft) return Promise.resolve(null);
    const { url, handle, key } = data.draft;
    return fetch(url, {
      method: "POST",
      body: JSON.stringify({ handle, key, ...fields }),
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      keepalive: true,
    }).catch(() => null);
  }
  /** The page is shown again after it went away: the pair's lease goes on, or the server
   * says the pair was given to someone else meanwhile (the answers stay in the form). */
  let given = false; // the server said the pair was given away: it says so once
  /** @param {(text: string) => void} say */
  function sayBack(say) {
    if (data.editing || !acting(state) || given) return;
    post({ back: true }).then(async (r) => {
      if (r?.status !== 409) return;
      given = true;
      const reply = await r.json().catch(() => null);
      if (typeof reply?.message === "string") say(reply.message);
    });
  }
  return { changed, remember, sendDraft, sayBack, cancel };
}

// --- connection: the page's link to the server -------------------------------------------------

/**
 * The page's connection to the server, as Streamlit marks it on its app element (data.dom).
 * While it is down the form says so and keeps every answer; back up, an event still unanswered
 * is sent again: Streamlit drops what is sent while disconnected, and after a reconnect to
 * another replica it does not rerun the page by itself. The server acts on one number once.
 * @param {FormData} data
 * @param {() => void} lost
 * @param {() => void} back
 * @param {State} state
 */
function watchConnection(data, lost, back, state) {
  const { app: appSelector, connection_state: attribute, connected: connectedValue } = data.dom;
  const app = document.querySelector(appSelector);
  function onConnection() {
    // The browser's own word counts too: gone offline, Streamlit may still call its socket
    // connected for a while, and a Submit then waits for nothing.
    const connected = navigator.onLine && (app?.getAttribute(attribute) || connectedValue) === connectedValue;
    if (!connected && !state.offline) {
      state.offline = true;
      lost();
    } else if (connected && state.offline) {
      state.offline = false;
      back();
    }
  }
  const watch = new MutationObserver(onConnection);
  return {
    start: () => {
      window.addEventListener("offline", onConnection);
      window.addEventListener("online", onConnection);
      if (app) watch.observe(app, { attributes: true, attributeFilter: [attribute] });
    },
    stop: () => {
      window.removeEventListener("offline", onConnection);
      window.removeEventListener("online", onConnection);
      watch.disconnect();
    },
  };
}
