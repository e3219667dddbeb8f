import { extname } from 'node:path';

/**
 * The answer to `POST /ui/{agent}`: the HTML that `LoadExternalComponent` (@langchain/langgraph-sdk/react-ui) puts in
 * a shadow root: a `<link>` per stylesheet and one `<script>` whose `onload` calls the bundle's
 * `__LGUI_<agent>.render(name, shadowRootId)`. The client replaces the first `{{shadowRootId}}` of the text.
 *
 * The official server writes `JSON.stringify(name)` into a single-quoted `onload` and the Host header into the URLs
 * as they come, so a name with `'` or a Host with `"` writes markup. Here nothing a request sends is written into
 * script: the name and the root id ride in `data-*` attributes that the fixed handler reads (`this.dataset`), every
 * attribute value is escaped (anything but letters, digits and `_.-:/` as a character reference), and the origin is
 * checked before it is used (request-origin.ts). The placeholder comes before any value a request chose, and no
 * escaped value can spell it (`{` is escaped), so the client's one replacement hits the real one.
 */
export interface UiTagsInput {
  /** The bundle's graph name (a name `ui` allows: letters, digits, `_.-`). */
  readonly agent: string;
  /** The component the message names (anything: the client sends it). */
  readonly name: string;
  /** `http://host:port/prefix`, or `//host` (protocol-relative), checked. */
  readonly origin: string;
  /** The bundle's file names. */
  readonly files: readonly string[];
}

export function uiTags({ agent, name, origin, files }: UiTagsInput): string {
  const url = (file: string) => attribute(`${origin}/ui/${encodeURIComponent(agent)}/${encodeURIComponent(file)}`);
  const tags: string[] = [];
  for (const css of files.filter((f) => extname(f) === '.css'))
    tags.push(`<link rel="stylesheet" href="${url(css)}" />`);
  const js = files.find((f) => extname(f) === '.js');
  if (js !== undefined) {
    // The same global name the bundler gives the bundle (@langchain/langgraph-ui: `__LGUI_` + agent, non-alphanumerics as `_`).
    const global = `__LGUI_${agent.replace(/[^a-zA-Z0-9]/g, '_')}`;
    tags.push(
      `<script src="${url(js)}" data-shadow-root-id="{{shadowRootId}}" data-name="${attribute(name)}" ` +
        `onload="${global}.render(this.dataset.name, this.dataset.shadowRootId)"></script>`,
    );
  }
  return tags.join('\n');
}

/** A value safe inside a double-quoted attribute, whatever it holds: every other character as `&#<code>;`. */
export function attribute(value: string): string {
  let out = '';
  for (const ch of value) out += /[A-Za-z0-9_.\-:/]/.test(ch) ? ch : `&#${ch.codePointAt(0)!};`;
  return out;
}
