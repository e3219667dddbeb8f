import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, startStack, type Stack } from '../helpers.ts';
import { servePage, type PageServer } from './page-server.ts';
import { UI_APP } from '../ui/ui-apps.ts';

/**
 * `LoadExternalComponent` of @langchain/langgraph-sdk/react-ui in headless Chromium, on a page of its own origin,
 * against the Agent Server through the edge: it asks `POST /ui/agent` for the tags, puts them in a shadow root, the
 * bundle loads from the edge and renders the app's component there with its stylesheet. A hostile component name
 * runs nothing.
 */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);

let stack: Stack;
let page: PageServer | undefined;
let pageUrl: string;
let browser: Browser | undefined;

beforeAll(async () => {
  stack = await startStack({ configPath: UI_APP });
  page = await servePage(fileURLToPath(new URL('./ui-page.ts', import.meta.url)));
  pageUrl = page.url;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await page?.close();
  await stack?.close();
});

async function open(name: string): Promise<{ tab: Page; problems: string[] }> {
  browser ??= await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  const tab = await browser.newPage();
  const problems: string[] = [];
  tab.on('pageerror', (e) => problems.push(`page: ${e.message}`));
  await tab.goto(`${pageUrl}?${new URLSearchParams({ api: stack.url, key: newKey(), name })}`);
  return { tab, problems };
}

describe('LoadExternalComponent in headless Chromium', () => {
  it.skipIf(hasChromium)(`SKIPPED: ${CHROMIUM} is missing (apt-get install chromium)`, () => {});

  it.runIf(hasChromium)(
    'renders the app\u2019s component into its shadow root, styled by the bundle\u2019s stylesheet',
    async () => {
      const { tab, problems } = await open('weather');
      const card = tab.locator('[data-testid=weather]'); // Playwright's CSS goes into open shadow roots
      await card.waitFor({ timeout: 20_000 });
      expect(await card.innerText()).toBe('Weather in Paris: sunny (rendered by ui-app)');
      expect(await card.evaluate((el) => getComputedStyle(el).color)).toBe('rgb(10, 20, 30)');
      expect(await card.evaluate((el) => el.getRootNode() instanceof ShadowRoot)).toBe(true);
      expect(await tab.locator('#fallback').count()).toBe(0);
      expect(problems).toEqual([]);
      await tab.close();
    },
    60_000,
  );

  it.runIf(hasChromium)(
    'a hostile name runs nothing: no element of its own, no handler',
    async () => {
      const { tab } = await open(
        `x' onload='window.__pwned=1' a='" onload="window.__pwned=2"><img src=x onerror="window.__pwned=3">`,
      );
      // The bundle loads and its render runs (with a name that is no component), nothing else does.
      await tab.waitForFunction(() => (globalThis as { __LGUI_agent?: unknown }).__LGUI_agent !== undefined, null, {
        timeout: 20_000,
      });
      await tab.waitForTimeout(300);
      expect(await tab.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await tab.locator('img').count()).toBe(0);
      await tab.close();
    },
    60_000,
  );
});
