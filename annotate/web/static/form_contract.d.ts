// The data contract between annotate/web/label_form.py (form_data, the events it reads) and
// annotate/web/static/label_form.js, written once. The JS is type-checked against it
// (`npm run check`: tsc), and tests/test_form_contract.py checks form_data's output against it
// by type-checking real outputs as `FormData` values. Model text arrives only in the `*_html`
// fields (annotate.web.render.safe_html); every other string is set as text.

export type Slot = "A" | "B";
export type Choice = Slot | "tie";
export type CellKind = "slot" | "reason" | "rating" | "aspect";

/** One question, in the order of the digit cursor (ratings, then aspect scores). */
export interface Cell {
  kind: CellKind;
  field: string;
  /** `${kind}:${field}`: how a refusal names the question. */
  name_field: string;
  name: string;
  slot: Slot | null;
  short?: string;
  help?: string;
  label?: string;
  option_titles?: Record<string, string>;
}

export interface Aspect {
  title_html: string;
  reason_html: string;
  evidence_html: string;
}

export interface Post {
  category: string;
  html: string;
}

export interface EarlierAnswer {
  pair_id: number;
  question: string;
  answer: string;
}

/** The answers as the browser holds them, sent with submit, draft, skip and back. */
export interface Form {
  slot: Choice | null;
  ratings: Record<string, number>;
  reason: string | null;
  comment: string;
  aspects: Record<string, number>;
}

/** Where the form finds Streamlit's own page structure: sent by the server from
 * annotate/web/streamlit_dom.py, the one place the app names it (a browser test checks each
 * against the running Streamlit). */
export interface StreamlitDom {
  /** A selector of Streamlit's app element. */
  app: string;
  /** The app element's attribute that says whether the page is connected to the server. */
  connection_state: string;
  /** That attribute's value while connected. */
  connected: string;
}

export interface FormData {
  /** One pair and visit: the assignment and whether it is an edit. */
  token: string;
  editing: boolean;
  progress: { done: number; total: number };
  /** The server's message for the last thing sent, and its tone. */
  flash: string | null;
  flash_tone: "info" | "warning";
  /** The number (`seq`) of the last event the server acted on; null before any. */
  answered: number | null;
  /** One server session (set by `label_form`): another value means the page reconnected to a
   * new session, on another replica, which never saw an event the form still waits for. */
  session?: string;
  /** Drop what the browser holds for this pair and show `initial` (saved in another tab). */
  reset: boolean;
  sign_out_url: string;
  /** Where drafts are posted without a page run (annotate/web/drafts.py), with this
   * assignment's opaque handle (no id reaches the page) and key; null when editing an earlier
   * answer (or no draft route). `away`: the page had said it went away (hidden or closed), so it
   * says it is back. `heartbeat`: every so many seconds a shown page says it is still there
   * (else its pair is given back). */
  draft: { url: string; handle: string; key: string; away: boolean; heartbeat: number } | null;
  guidelines_html: string;
  question_html: string;
  aspects: Aspect[];
  narrative_html: string;
  posts_count: number;
  /** null until the browser asks for them (the `posts` event, when the panel is opened). */
  posts: Post[] | null;
  responses: Record<Slot, string>;
  scale: number[];
  aspect_check: boolean;
  order: Cell[];
  /** [value, label, key] */
  choices: [Choice, string, string][];
  allow_ties: boolean;
  /** [value, label, key] */
  reasons: [string, string, string][];
  preference_question: string;
  quality_lead: string;
  aspect_lead: string;
  reason_question: string;
  initial: Form;
  seconds_before: number;
  can_go_back: boolean;
  /** What Backspace says where there is no earlier pair (`can_go_back` false). */
  no_earlier: string;
  history: EarlierAnswer[] | null;
  /** What the earlier answers' list says when it lists none. */
  history_empty: string;
  /** Missing questions as `name_field`s, from the server's own check of a Submit. */
  refused: string[];
  dom: StreamlitDom;
}

/** What each event sends (`setTriggerValue(name, value)`). */
export interface Events {
  submit: { form: Form; seconds: number; seq: number };
  draft: { form: Form; seconds: number };
  skip: { form: Form; seconds: number; seq: number };
  back: { form: Form; seconds: number; seq: number };
  cancel: { seq: number };
  open: { pair_id: number; seq: number };
  history: boolean;
  posts: boolean;
}

export interface Component {
  data: FormData;
  parentElement: HTMLElement | ShadowRoot;
  setTriggerValue: <K extends keyof Events>(name: K, value: Events[K]) => void;
}
