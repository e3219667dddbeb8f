import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, startStack, type Stack } from '../helpers.ts';
import { servePage, type PageServer } from './page-server.ts';

/**
 * A page built from @langchain/react's `useStream` (chat-page.ts, bundled with esbuild), served on its own origin
 * next to the gateway, driven in headless Chromium against the Agent Server through the edge (CORS, the key in a
 * header, the thread-centric protocol over server-sent events): it sends a message, renders the reply token by token,
 * answers the interrupt, and after a reload shows the same thread.
 */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);

let stack: Stack;
let page: PageServer | undefined;
let pageUrl: string;
let browser: Browser | undefined;

beforeAll(async () => {
  stack = await startStack();
  page = await servePage(fileURLToPath(new URL('./chat-page.ts', import.meta.url)));
  pageUrl = page.url;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await page?.close();
  await stack.close();
});

describe('@langchain/react useStream in headless Chromium', () => {
  it.skipIf(hasChromium)(`SKIPPED: ${CHROMIUM} is missing (apt-get install chromium)`, () => {});

  it.runIf(hasChromium)(
    'sends a message, streams the reply token by token, answers the interrupt, reloads into the thread',
    async () => {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      });
      const tab = await browser.newPage();
      const problems: string[] = [];
      tab.on('pageerror', (e) => problems.push(`page: ${e.message}`));
      const query = new URLSearchParams({ api: stack.url, key: newKey() });
      await tab.goto(`${pageUrl}?${query}`);

      await tab.fill('#input', 'hello from the browser');
      await tab.click('#send');
      await tab.waitForSelector('#interrupt', { timeout: 20_000 });
      const reply = 'You said "hello from the browser" (4 words).';
      expect(await tab.locator('#messages li[data-role=ai]').first().innerText()).toContain(reply);
      const texts = await tab.evaluate(() => window.__replyTexts);
      // the reply grew word by word on the page: many partial texts, each a prefix of the next
      const partials = texts.filter((t) => t.startsWith('You'));
      expect(partials.length).toBeGreaterThan(5);
      for (let i = 1; i < partials.length; i++) expect(partials[i]!.startsWith(partials[i - 1]!)).toBe(true);
      expect(await tab.locator('#interrupt span').innerText()).toBe('Send this reply?');

      await tab.click('#approve');
      await tab.waitForSelector('#messages li:has-text("Reviewer said: yes")', { timeout: 20_000 });
      await tab.waitForFunction(() => !document.querySelector('#interrupt'));
      const threadId = new URL(tab.url()).searchParams.get('thread');
      expect(threadId).toMatch(/^[0-9a-f-]{36}$/);

      await tab.reload();
      await tab.waitForSelector('#messages li:has-text("Reviewer said: yes")', { timeout: 20_000 });
      const after = await tab.locator('#messages li').allInnerTexts();
      expect(after[0]).toBe('hello from the browser');
      expect(after.some((t) => t.includes(reply))).toBe(true);
      expect(new URL(tab.url()).searchParams.get('thread')).toBe(threadId);
      expect(problems).toEqual([]);
    },
    60_000,
  );
});
