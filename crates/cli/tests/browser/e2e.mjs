// End-to-end test of the Scriptorium web page in a real Chromium, at 1280×800 and 390×844.
//
// Environment: BASE_URL (the link printed by `scriptorium serve`, with `#token=…`), ARTIFACTS
// (a directory for screenshots), optionally CHROMIUM (default /usr/bin/chromium).
// The workspace behind BASE_URL must hold at least one topic whose paragraphs cite footnotes,
// a timeline entry and a core master, more compost facts than the rail holds, Dana's topic
// (people/dana.md), and its home one imported session with two branches, 60 more sessions
// (chat-00…chat-59, answers without a model) and a Codex rollout (codex-compost); chat-41 and
// chat-42 are written and forgotten. Exits non-zero with a message on the first failure.

import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const BASE_URL = process.env.BASE_URL;
const ARTIFACTS = process.env.ARTIFACTS;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
if (!BASE_URL || !BASE_URL.includes('#token=')) fail('BASE_URL must be the served link, with #token=…');
if (!ARTIFACTS) fail('ARTIFACTS must name a directory for screenshots');
fs.mkdirSync(ARTIFACTS, { recursive: true });

const TIMEOUT = 10000;
let width = 0;
let stepName = 'start';

function fail(message) {
  console.error(`e2e FAILED${width ? ` at ${width}px` : ''}${stepName ? ` (step ${stepName})` : ''}: ${message}`);
  process.exit(1);
}
function check(cond, message) {
  if (!cond) throw new Error(message);
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${width}-${name}.png`) });
}

async function noOverflow(page) {
  const r = await page.evaluate(() => {
    const vw = window.innerWidth;
    const bad = [];
    for (const sel of ['.top', '.rail', '.main', '.head', '.actions', '.body', '.doc', '.editor', '.diag', '.nav', '.banner']) {
      for (const n of document.querySelectorAll(sel)) {
        const b = n.getBoundingClientRect();
        if (b.width && (b.right > vw + 0.5 || b.left < -0.5)) bad.push(`${sel} spans ${Math.round(b.left)}..${Math.round(b.right)}`);
      }
    }
    return { sw: document.documentElement.scrollWidth, vw, bad };
  });
  check(r.sw <= r.vw, `horizontal overflow: scrollWidth ${r.sw} > innerWidth ${r.vw}`);
  check(r.bad.length === 0, `elements outside the viewport: ${r.bad.join('; ')}`);
}

async function step(page, name, fn) {
  stepName = name;
  try {
    await fn();
  } catch (e) {
    await shot(page, `${name}-FAILED`).catch(() => {});
    throw e;
  }
  await noOverflow(page);
  await shot(page, name);
}

const narrow = () => width < 720;

async function visible(page, selector, what) {
  try {
    await page.locator(selector).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  } catch {
    throw new Error(`${what || selector} is not visible`);
  }
}
async function hidden(page, selector, what) {
  try {
    await page.locator(selector).first().waitFor({ state: 'hidden', timeout: TIMEOUT });
  } catch {
    throw new Error(`${what || selector} is still visible`);
  }
}

async function section(page, name) {
  if (narrow() && (await page.locator('#back').isVisible())) await back(page);
  await page.click(`.nav-item[data-section="${name}"]`);
  await page.waitForFunction((n) => document.querySelector('.nav-item.active')?.dataset.section === n, name, { timeout: TIMEOUT });
}

async function back(page) {
  check(narrow(), 'the back button is only for narrow widths');
  await visible(page, '#back', 'the back button');
  await page.click('#back');
  await visible(page, '#rail', 'the section list after going back');
  await hidden(page, '#main', 'the detail pane after going back');
}

// Follows every link the detail pane shows, one at a time: none may leave the page (a link the
// page does not handle would load a URL the server answers with a JSON 404), and each opens a
// view of the page or stays where it is; Back returns to the view walked.
async function linkWalk(page, what, ready) {
  const start = page.url();
  const count = await page.locator('#body a[href]').count();
  check(count > 0, `${what} shows no links`);
  const seen = [];
  for (let i = 0; i < count; i++) {
    const link = page.locator('#body a[href]').nth(i);
    const href = await link.getAttribute('href');
    seen.push(href);
    await link.click();
    const url = new URL(page.url());
    check(url.pathname === '/', `the link ${href} in ${what} left the page for ${url.pathname}`);
    await visible(page, '#head-title', `the page after following ${href}`);
    check(!(await page.locator('#gate').isVisible()), `the link ${href} lost the access token`);
    if (page.url() !== start) {
      await visible(page, '#record, #preview', `the view the link ${href} opens`);
      await page.goBack();
      await page.waitForFunction((u) => location.href === u, start, { timeout: TIMEOUT });
    }
    await visible(page, ready, `${what} after following ${href}`);
  }
  return seen;
}

// Every row of a rail list longer than the rail is drawn whole (issue 34: rows of such a list
// were sized to their minimum, titles 0 px high, snippets clipped): scrolled into view, each
// row's title has height and shows all its text, its path is not cut, its snippet shows its
// first two lines (the clamp) or all of them, and the title is what the page shows there.
async function railRowsRender(page, list, what) {
  const bad = await page.evaluate((sel) => {
    const box = document.querySelector(sel);
    if (!box) return [`${sel} is missing`];
    const out = [];
    if (box.scrollHeight <= box.clientHeight) out.push(`the list is not longer than the rail (${box.scrollHeight} <= ${box.clientHeight}): the test needs more rows`);
    for (const [i, row] of [...box.querySelectorAll('.row')].entries()) {
      row.scrollIntoView({ block: 'nearest' });
      const title = row.querySelector('.row-main');
      const r = title.getBoundingClientRect();
      const b = box.getBoundingClientRect();
      if (r.height <= 0) out.push(`row ${i}: its title is ${r.height} px high`);
      if (title.scrollHeight > title.clientHeight + 1) out.push(`row ${i}: its title is clipped (${title.scrollHeight} > ${title.clientHeight})`);
      if (r.top < b.top - 1 || r.bottom > b.bottom + 1) out.push(`row ${i}: its title is outside the list after scrolling to it`);
      const hit = document.elementFromPoint(r.left + Math.min(r.width / 2, 20), r.top + r.height / 2);
      if (!hit || !row.contains(hit)) out.push(`row ${i}: something else is drawn over its title`);
      for (const path of row.querySelectorAll('.hit-path')) if (path.scrollHeight > path.clientHeight + 1 || path.getBoundingClientRect().height <= 0) out.push(`row ${i}: its path is clipped`);
      for (const text of row.querySelectorAll('.hit-text')) {
        const lines = 2 * parseFloat(getComputedStyle(text).lineHeight);
        if (text.clientHeight + 1 < Math.min(text.scrollHeight, lines)) out.push(`row ${i}: its snippet shows ${text.clientHeight} of ${text.scrollHeight} px`);
      }
    }
    return out;
  }, list);
  check(bad.length === 0, `${what}: ${bad.slice(0, 5).join('; ')}${bad.length > 5 ? ` (+${bad.length - 5} more)` : ''}`);
}

async function assertDetailOnly(page) {
  if (!narrow()) return;
  await visible(page, '#main');
  check(!(await page.locator('#rail').isVisible()), 'under 720 px the list must be hidden while a detail is shown');
}

async function run(browser, w, h) {
  width = w;
  const context = await browser.newContext({ viewport: { width: w, height: h } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of (400|409)/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });

  await step(page, '01-topics', async () => {
    await page.goto(BASE_URL);
    await visible(page, '.row.topic', 'a topic row');
    check(!page.url().includes('token='), `the token is still in the address bar: ${page.url()}`);
    const listed = await page.locator('.row.topic').evaluateAll((rows) => rows.map((r) => r.dataset.path));
    check(!listed.some((p) => /^(topics\/)?core\.md$/.test(p)), 'the topics list shows core.md');
    if (!narrow()) await visible(page, '.head-title', 'the content header');
    const labels = await page.locator('.nav-item .nav-label').evaluateAll((ls) => ls.map((l) => l.getBoundingClientRect().height > 0 && getComputedStyle(l).display !== 'none'));
    check(labels.length === 5 && labels.every(Boolean), `the section names are not shown at ${w} px`);
  });

  await step(page, '02-keyboard', async () => {
    await page.locator('.nav-item[data-section="topics"]').focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Shift+Tab');
    const outline = await page.evaluate(() => {
      const a = document.activeElement;
      return a && a.matches('.nav-item') ? getComputedStyle(a).outlineStyle : 'no nav button focused';
    });
    check(outline !== 'none' && outline !== 'no nav button focused', `keyboard focus has no visible outline (${outline})`);
  });

  await step(page, '03-timeline', async () => {
    await section(page, 'timeline');
    await visible(page, '.row.day', 'a timeline day (newest year and month open)');
    const chevrons = await page.locator('.row.folder svg.chev').count();
    check(chevrons >= 1, 'timeline year/month rows have no chevron');
    await page.locator('.row.day').first().click();
    await visible(page, '#day', 'the timeline entry');
    await assertDetailOnly(page);
  });
  await step(page, '03a-timeline-links', async () => {
    await linkWalk(page, 'a timeline day', '#day');
  });
  await step(page, '03c-timeline-replies', async () => {
    // The worm-bin fact cites a turn and three replies: one "reply" link, counted.
    await page.evaluate(() => { location.hash = '#/day/2024-06-01'; });
    await visible(page, '#day', 'the day of the worm bin');
    const row = page.locator('#day p', { hasText: 'worm bin' }).first();
    const labels = await row.locator('a[href*="#source-"]').allTextContents();
    check(JSON.stringify(labels) === JSON.stringify(['conversation turn', 'reply ×3']), `the row's citations read ${JSON.stringify(labels)}`);
    await row.locator('a', { hasText: 'reply ×3' }).click();
    await visible(page, '#record', 'the first reply');
    check((await page.locator('#record .record-text').first().textContent()).includes('Worm bin, part 1'), 'the counted link does not open the first reply');
    await page.goBack();
    await visible(page, '#day', 'the day after Back');
  });

  await step(page, '03b-timeline-citation', async () => {
    const link = page.locator('#day a[href*="#source-"]').first();
    check((await link.count()) === 1, 'the timeline entry shows no citation link');
    await link.click();
    await visible(page, '#record', 'the record a timeline citation points to');
    check(!page.url().includes('/sources/'), `the citation left the page: ${page.url()}`);
    await visible(page, '#record-cited .row.cite', 'the blocks citing the record');
  });
  if (narrow()) await step(page, '04-timeline-back', () => back(page));

  await step(page, '05-recent', async () => {
    await section(page, 'recent');
    if (narrow()) await assertDetailOnly(page);
    await page.waitForFunction(() => /^\d+ \/ \d+ records/.test(document.getElementById('head-sub').textContent), null, { timeout: TIMEOUT });
    await visible(page, '#recent .rec, .empty', 'recent records or the empty state');
  });

  await step(page, '05b-changes', async () => {
    // The workspace's transactions, each with what it changed; a topic file opens its history.
    await page.click('.segment button[data-mode="changes"]');
    await visible(page, '#changes .change', 'the recent transactions');
    check(/Txn-Id t-/.test(await page.locator('#changes .change-meta').first().textContent()), 'a transaction is not named');
    await noOverflow(page);
    await shot(page, '05b-changes-list');
    // A transaction's whole diff, its changed lines coloured: the topic first, the derived views
    // folded away. (At the second width the newest transaction is the first width's forget,
    // which only removes lines.)
    const files = await page.locator('#changes .change').first().locator('.change-files > *').allTextContents();
    check(!/^(recent_events\.jsonl|relations\.json|timeline\/)/.test(files[0] || ''), `the files start with a derived one: ${files.join(' ')}`);
    await page.locator('#changes .show-diff').first().click();
    await visible(page, '#changes .change-diffs > .diff .dl.add, #changes .change-diffs > .diff .dl.del', 'the diff of a transaction');
    const first = await page.locator('#changes .change').first().locator('.change-diffs > .diff').first().locator('.dl').first().textContent();
    check(/^--- a\/topics\//.test(first), `the first diff shown is not a topic's: ${first}`);
    const derived = page.locator('#changes .change').first().locator('details.derived');
    check((await derived.count()) === 1 && !(await derived.evaluate((d) => d.open)), 'the derived files are not folded away');
    check(!(await derived.locator('.diff').first().isVisible()), 'a derived diff is shown unfolded');
    await noOverflow(page);
    await shot(page, '05c-changes-diff');
    await page.locator('#changes .change-files .link').first().click();
    await visible(page, '#history .change', 'the history of a topic a transaction changed');
  });

  await step(page, '06-core-preview', async () => {
    await section(page, 'core');
    await visible(page, '#core-preview', 'the core prompt preview');
    const sub = await page.locator('#head-sub').textContent();
    check(/Injection (enabled|disabled)/.test(sub), `the core header does not show the injection state: "${sub}"`);
    check(/[\d,]+ \/ [\d,]+ tokens/.test(sub), `the core header does not show tokens / budget: "${sub}"`);
    check((await page.locator('#core-preview textarea').count()) === 0, 'the prompt preview is editable');
  });
  await step(page, '07-core-source', async () => {
    const label = await page.locator('.segment button[data-mode="source"]').textContent();
    check(label === 'Core blocks (Markdown)', `the core editor is labelled "${label}"`);
    check(!(await page.locator('#main').textContent()).includes('Source records'), 'the core page still says "Source records"');
    await page.click('.segment button[data-mode="source"]');
    await visible(page, '#editor', 'the source records editor');
    check((await page.locator('#editor').inputValue()).length > 0, 'the source records are empty');
    check((await page.locator('#core-preview').count()) === 0, 'the prompt preview is still shown beside the source records');
  });
  await step(page, '07b-core-preview-again', async () => {
    await page.click('.segment button[data-mode="preview"]');
    await visible(page, '#core-preview', 'the prompt preview after toggling back');
  });
  if (narrow()) await step(page, '08-core-back', () => back(page));

  const marker = `Checked in the browser at ${w} px`;
  let topicPath = '';
  await step(page, '09-topic-preview', async () => {
    await section(page, 'topics');
    const row = page.locator('.row.topic').first();
    topicPath = await row.getAttribute('data-path');
    await row.click();
    // The topic Recent → Changes opened may be this one, still showing its history.
    const preview = page.locator('.segment button[data-mode="preview"][aria-pressed="false"]');
    if (await preview.count()) await preview.click();
    await visible(page, '#preview', 'the topic preview');
    await assertDetailOnly(page);
    const head = await page.locator('#head').boundingBox();
    check(narrow() || Math.round(head.height) === 76, `the content header is ${head.height}px high, not 76`);
  });

  await step(page, '09b-citation', async () => {
    const link = page.locator('#preview a[href*="#source-"]').first();
    check((await link.count()) === 1, `topic ${topicPath} shows no citation link`);
    await link.click();
    await visible(page, '#record', 'the archived record the citation points to');
    await assertDetailOnly(page);
    check(!page.url().includes('/sources/'), `the citation left the page: ${page.url()}`);
    check((await page.locator('#record .record-text').first().textContent()).trim().length > 0, 'the record has no text');
    const sub = await page.locator('#head-sub').textContent();
    check(/turn \d+ of \d+/.test(sub), `the record header does not place it in its conversation: "${sub}"`);
    // A deep link: the record survives a reload without the token in the address bar.
    const here = page.url();
    check(/#\/record\/.+\/source-[0-9a-f]+$/.test(here), `the record has no link of its own: ${here}`);
    await page.reload();
    await visible(page, '#record', 'the record after a reload');
    check(!(await page.locator('#gate').isVisible()), 'the reload asked for the access link again');
    await page.click('#record-whole');
    await visible(page, '#conversation', 'the whole conversation');
    await visible(page, '#record-cited .row.cite', 'the blocks citing the record');
  });
  await step(page, '09c-cited-by', async () => {
    await page.locator('#record-cited .row.cite').first().click();
    await visible(page, '#preview', 'the topic the citing block is in');
    check((await page.locator('#record').count()) === 0, 'the record is still shown');
    // Back returns to the record, and Back again to the topic it was opened from.
    await page.goBack();
    await visible(page, '#record', 'the record after Back');
    await page.goBack();
    await visible(page, '#preview', 'the topic after Back again');
    check((await page.locator('#record').count()) === 0, 'the record is still shown after Back');
  });

  await step(page, '09e-link-walk', async () => {
    // The budget tracker: citations, footnote links and a link to Dana's garden block.
    if (narrow()) await back(page);
    await page.locator('.row.topic[data-path="projects/budget-tracker.md"]').click();
    await visible(page, '#preview', 'the budget tracker');
    const hrefs = await linkWalk(page, 'the budget tracker', '#preview');
    check(hrefs.some((h) => /dana\.md#\^/.test(h)), `the walk met no topic link: ${hrefs.join(' ')}`);
    const toDana = page.locator('#preview a[href*="dana.md#^"]').first();
    await toDana.click();
    await visible(page, '#preview', 'the linked topic');
    check(/#\/topic\/people%2Fdana\.md\/\^[0-9a-z]+$/.test(page.url()), `the topic link did not open Dana at the block: ${page.url()}`);
    await page.goBack();
    await visible(page, '#preview', 'the budget tracker after Back');
  });

  await step(page, '09d-backlinks', async () => {
    // Dana's garden block is linked from the budget tracker: the topic lists it, and it opens.
    await page.evaluate(() => { location.hash = `#/topic/${encodeURIComponent('people/dana.md')}`; });
    await visible(page, '#topic-backlinks .row.cite', 'the blocks linking to the topic');
    await shot(page, '09d-linked-from');
    await page.locator('#topic-backlinks .row.cite').first().click();
    await page.waitForFunction(() => document.getElementById('head')?.textContent.includes('Budget tracker'), null, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the linking block did not open its topic'); });
    await visible(page, '#preview', 'the linking topic');
    await page.evaluate((p) => { location.hash = `#/topic/${encodeURIComponent(p)}`; }, topicPath);
    await page.waitForFunction((p) => document.querySelector(`.row.topic.active[data-path="${p}"]`) !== null || document.getElementById('head-sub')?.textContent.includes(`topics/${p}`), topicPath, { timeout: TIMEOUT })
      .catch(() => { throw new Error(`topic ${topicPath} did not open again`); });
    await visible(page, '#preview', 'the topic again');
  });

  await step(page, '10-topic-saved', async () => {
    await page.click('.segment button[data-mode="edit"]');
    await visible(page, '#editor', 'the topic editor');
    const source = await page.locator('#editor').inputValue();
    const lines = source.split('\n');
    const i = lines.findIndex((l) => /\[\^[^\]]+\](?!:)/.test(l) && !/^\[\^[^\]]+\]:/.test(l));
    check(i >= 0, `topic ${topicPath} has no paragraph citing a footnote`);
    lines[i] = lines[i].replace(/\[\^/, ` ${marker}.[^`);
    await page.locator('#editor').fill(lines.join('\n'));
    await page.click('#save');
    await visible(page, '#preview', 'the preview after saving');
    await page.waitForFunction((m) => document.getElementById('preview')?.textContent.includes(m), marker, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the saved text does not appear in the preview'); });
  });

  await step(page, '10b-topic-history', async () => {
    // The save is the newest change in the topic's history, its diff showing the added text.
    await page.click('.segment button[data-mode="history"]');
    await visible(page, '#history .change', 'the topic history');
    const first = page.locator('#history .change').first();
    const added = await first.locator('.dl.add').allTextContents();
    check(added.some((l) => l.includes(marker)), `the newest change does not add "${marker}"`);
    check((await first.locator('.dl.del').count()) >= 1, 'the newest change removes no line');
    check(/Txn-Id t-/.test(await first.locator('.change-meta').textContent()), 'the change does not name its transaction');
    check((await page.locator('#history .change').count()) >= 2, 'the history does not reach the change that created the topic');
    await noOverflow(page);
    await shot(page, '10b-history-list');
    // Restoring the version before the save opens it in the editor (Save would install it as
    // a new change); Cancel keeps the saved text.
    await page.locator('#history .change').nth(1).locator('.restore').click();
    await visible(page, '#editor', 'the editor with the earlier version');
    check(!(await page.locator('#editor').inputValue()).includes(marker), 'the restored version still holds the later text');
    await page.click('#cancel');
    await visible(page, '#preview', 'the preview after cancelling the restore');
    await page.waitForFunction((m) => document.getElementById('preview')?.textContent.includes(m), marker, { timeout: TIMEOUT })
      .catch(() => { throw new Error('cancelling the restore changed the topic'); });
  });

  await step(page, '11-topic-invalid', async () => {
    await page.click('.segment button[data-mode="edit"]');
    await visible(page, '#editor', 'the topic editor');
    const source = await page.locator('#editor').inputValue();
    check(source.includes(marker), 'the editor does not hold the saved text');
    const broken = source.split('\n').filter((l) => !/^\[\^[^\]]+\]:/.test(l)).join('\n');
    check(broken !== source, 'the topic has no footnote definition to remove');
    await page.locator('#editor').fill(broken);
    await page.click('#save');
    await visible(page, '#diagnostics', 'the validation errors');
    const n = await page.locator('#diagnostics li').count();
    check(n >= 1, 'the validation panel lists no violation');
    check((await page.locator('#editor').inputValue()) === broken, 'the draft was not kept after a rejected save');
    const [ed, dg] = [await page.locator('#editor').boundingBox(), await page.locator('#diagnostics').boundingBox()];
    const overlap = ed.x < dg.x + dg.width && dg.x < ed.x + ed.width && ed.y < dg.y + dg.height && dg.y < ed.y + ed.height;
    check(!overlap, 'the validation errors overlap the editor');
    if (!narrow()) check(dg.x >= ed.x + ed.width - 1, 'the validation errors are not beside the editor');
  });

  await step(page, '12-draft-kept', async () => {
    const draft = await page.locator('#editor').inputValue();
    await page.click('.segment button[data-mode="preview"]');
    await visible(page, '#preview');
    await page.click('.segment button[data-mode="edit"]');
    await visible(page, '#editor');
    check((await page.locator('#editor').inputValue()) === draft, 'the draft was lost when switching views');
    await page.click('#cancel');
    await visible(page, '#preview', 'the preview after cancelling');
    check((await page.locator('#preview').textContent()).includes(marker), 'cancel did not restore the saved version');
  });

  await step(page, '12b-restore-deletes', async () => {
    // Restoring a version with fewer paragraphs deletes the newer ones: the save names them,
    // and the confirmation deletes exactly those (issue 34).
    await page.evaluate(() => { location.hash = `#/topic/${encodeURIComponent('people/dana.md')}`; });
    await visible(page, '#preview', "Dana's topic");
    await page.click('.segment button[data-mode="edit"]');
    await visible(page, '#editor', "Dana's editor");
    const source = await page.locator('#editor').inputValue();
    const cite = /\[\^(e-[0-9a-f]+)\]/.exec(source);
    check(cite, "Dana's topic cites no evidence");
    const added = `Dana bakes rye bread, noted at ${w} px.`;
    const lines = source.split('\n');
    lines.splice(lines.findIndex((l) => /^\[\^e-/.test(l)), 0, `${added}[^${cite[1]}]`, '');
    await page.locator('#editor').fill(lines.join('\n'));
    await page.click('#save');
    await page.waitForFunction((a) => document.getElementById('preview')?.textContent.includes(a), added, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the added paragraph was not saved'); });
    await page.click('.segment button[data-mode="history"]');
    await visible(page, '#history .change', "Dana's history");
    await page.locator('#history .change').nth(1).locator('.restore').click();
    await visible(page, '#editor', 'the version before the paragraph');
    await page.click('#save');
    await visible(page, '#deletes', 'the paragraphs restoring it deletes');
    const listed = await page.locator('#deletes li').allTextContents();
    check(listed.length === 1 && listed[0].includes(added) && /^\^[0-9a-z]+ /.test(listed[0]), `the deleted paragraphs read ${JSON.stringify(listed)}`);
    check(await page.locator('#preview').count() === 0, 'the refused restore left the editor');
    await shot(page, '12b-deletes');
    await page.click('#confirm-deletes');
    await visible(page, '#preview', 'the restored version');
    await page.waitForFunction((a) => !document.getElementById('preview')?.textContent.includes(a), added, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the confirmed restore kept the paragraph'); });
    check((await page.locator('#preview').textContent()).includes('vegetable garden'), 'the restore deleted more than it said');
  });

  if (narrow()) {
    await step(page, '13-topic-back', async () => {
      await back(page);
      await visible(page, '.row.topic.active', 'the selected topic in the list');
      const navs = await page.locator('.nav-item').evaluateAll((ns) => ns.map((n) => n.getBoundingClientRect().height));
      check(navs.every((x) => x > 0), 'the icon rail is not shown in the list state');
    });
  }

  await step(page, '14-search', async () => {
    if (narrow() && (await page.locator('#back').isVisible())) await back(page);
    await page.fill('#search', 'the');
    await visible(page, '#search-results', 'the search results');
    await page.waitForFunction(() => !document.querySelector('#search-results')?.textContent.includes('Searching'), null, { timeout: TIMEOUT });
    await page.fill('#search', 'vegetable garden');
    await visible(page, '#search-results .row.hit .hit-path', 'the path of a search hit');
    const rows = await page.locator('#search-results .row.hit').evaluateAll((rs) => rs.map((r) => ({
      path: r.querySelector('.hit-path')?.textContent || '',
      clipped: [...r.querySelectorAll('.row-main,.hit-path')].some((c) => c.scrollWidth > c.clientWidth + 1),
    })));
    check(rows.some((r) => /^topics\/.+\.md$/.test(r.path)), `no search hit names its file: ${JSON.stringify(rows)}`);
    check(!rows.some((r) => r.clipped), `a search hit's title or path is clipped: ${JSON.stringify(rows)}`);
    await page.fill('#search', '');
    await visible(page, '.row.topic', 'the topic list after clearing the search');
  });

  await step(page, '14a-many-hits', async () => {
    // More hits than the rail holds: every one is drawn whole.
    await page.fill('#search', 'compost pile shed');
    await page.waitForFunction(() => document.querySelectorAll('#search-results .row.hit').length >= 8, null, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the compost search does not fill the rail'); });
    await railRowsRender(page, '#search-results', 'the search results');
    await page.fill('#search', '');
    await visible(page, '.row.topic', 'the topic list after clearing the search');
  });

  const fact = `Dana's bike is blue, noted in the browser at ${w} px.`;
  await step(page, '14b-add-note', async () => {
    if (narrow() && (await page.locator('#back').isVisible())) await back(page);
    await page.click('#add-note');
    await visible(page, '#note-form', 'the note form');
    await page.fill('#note-text', fact);
    await page.click('#compose-save');
    await visible(page, '#preview', 'the topic the note went into');
    await page.waitForFunction((f) => document.getElementById('preview')?.textContent.includes(f), fact, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the note does not appear in its topic'); });
  });
  await step(page, '14c-note-cited', async () => {
    const cites = page.locator('#preview a[href*="#source-"]');
    check((await cites.count()) >= 1, 'the noted topic shows no citation');
    await cites.last().click();
    await visible(page, '#record', 'the record the note cites');
    check((await page.locator('#record .record-text').first().textContent()).includes(fact), 'the note is not archived as its record');
  });
  await step(page, '14d-new-topic', async () => {
    if (narrow() && (await page.locator('#back').isVisible())) await back(page);
    await page.click('#new-topic');
    await visible(page, '#topic-form', 'the new topic form');
    const first = `The browser made this topic at ${w} px.`;
    await page.fill('#new-topic-path', `browser/width-${w}`);
    await page.fill('#note-text', first);
    await page.click('#compose-save');
    await visible(page, '#preview', 'the new topic');
    await page.waitForFunction((f) => document.getElementById('preview')?.textContent.includes(f), first, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the new topic does not hold its first fact'); });
    if (narrow()) await back(page);
    await visible(page, `.row.topic[data-path="browser/width-${w}.md"]`, 'the new topic in the list');
  });

  await step(page, '16-sessions', async () => {
    await section(page, 'sessions');
    const row = page.locator('#session-list .row.session').first();
    await visible(page, '#session-list .row.session', 'the imported session in the list');
    const text = await row.textContent();
    check(/2 branches/.test(text), `the session row does not show its two branches: ${text}`);
    await row.click();
    await visible(page, '#session-thread', 'the session read as a thread');
    await assertDetailOnly(page);
    await visible(page, '#session-thread .badge.fork', 'the fork marker on the turn the branches leave');
    check((await page.locator('#session-thread ol.thread-list').count()) === 2, 'both branches are shown');
    check(/#\/session\/.+$/.test(page.url()), `the session has no link of its own: ${page.url()}`);
    await page.reload();
    await visible(page, '#session-thread', 'the thread after a reload');
    check(!(await page.locator('#gate').isVisible()), 'the reload asked for the access link again');
  });
  await step(page, '16b-write-now', async () => {
    await page.click('#write-now');
    await visible(page, '#write-result', 'the outcome of Write now');
    const said = await page.locator('#write-result').textContent();
    // The first width writes the conversation as it stands; the second finds it written.
    const expected = w === 1280 ? /^Wrote \d+ turns? in \d+ batch/ : /^Nothing to write/;
    check(expected.test(said), `Write now said: "${said}"`);
    await visible(page, '#session-thread .badge.ok', 'a turn marked written');
    // Both branches are written: no turn is left to write, and the list says so.
    await page.waitForFunction(() => !document.querySelector('#session-thread')?.textContent.includes('to write'), null, { timeout: TIMEOUT })
      .catch(() => { throw new Error('a turn is still marked "to write" after Write now'); });
  });
  await step(page, '16c-session-record', async () => {
    await page.locator('#session-thread button.link').first().click();
    await visible(page, '#record', 'the record of a written turn');
    check((await page.locator('#record .record-text').first().textContent()).includes('sunny balcony'), 'the record is not the turn');
    await page.click('#record-session');
    await visible(page, '#session-thread', 'the session from its record');
    await page.goBack();
    await visible(page, '#record', 'the record after Back');
    await page.goBack();
    await visible(page, '#session-thread', 'the thread after Back again');
  });

  await step(page, '16d-search-record', async () => {
    await section(page, 'topics');
    await page.fill('#search', 'peppers herbs');
    await visible(page, '#search-results .row.hit.source', 'a record among the search results');
    await page.locator('#search-results .row.hit.source').first().click();
    await visible(page, '#record', 'the record a search hit opens');
    await assertDetailOnly(page);
    check(!page.url().includes('/sources/'), `the search hit left the page: ${page.url()}`);
    check((await page.locator('#record .record-text').first().textContent()).includes('herbs'), 'the hit opened another record');
    await page.goBack();
    await visible(page, '#search-results', 'the search results after Back');
    await page.fill('#search', '');
  });

  await step(page, '16e-many-sessions', async () => {
    await section(page, 'sessions');
    await visible(page, '#session-list .row.session', 'the sessions');
    const n = await page.locator('#session-list .row.session').count();
    check(n >= 40, `only ${n} sessions are listed`);
    await railRowsRender(page, '#session-list', 'the sessions list');
  });
  await step(page, '16f-speakers', async () => {
    // An answer whose model nobody recorded is the assistant's, never "unknown"; Codex's
    // developer instructions are no turn; a Codex answer names its model.
    await page.evaluate(() => { location.hash = '#/session/chat-07'; });
    await visible(page, '#session-thread .turn-item.assistant', 'an answer without a model');
    const meta = await page.locator('#session-thread .turn-item.assistant .rec-meta').first().textContent();
    check(/^assistant\b/.test(meta) && !/unknown/.test(meta), `the answer is labelled "${meta}"`);
    await page.evaluate(() => { location.hash = '#/session/codex-compost'; });
    await page.waitForFunction(() => document.getElementById('session-thread')?.textContent.includes('How hot'), null, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the Codex session does not open'); });
    const turns = await page.locator('#session-thread .turn-item').allTextContents();
    check(!turns.some((t) => t.includes('permissions instructions')), `Codex's instructions are a turn: ${JSON.stringify(turns)}`);
    const metas = await page.locator('#session-thread .turn-item.assistant .rec-meta').allTextContents();
    check(metas.length === 1 && metas[0].startsWith('gpt-5.5'), `the Codex answer is labelled ${JSON.stringify(metas)}`);
  });

  // Forgetting (issue 36): each width forgets a session of its own (chat-41, chat-42) once the
  // journal has written it. The record's and the block's Forget show their plan and are
  // cancelled; the session's plan is confirmed: its turns keep their place without their text,
  // and the topic no longer shows its block.
  const n = w === 1280 ? 41 : 42;
  const chat = `chat-${n}`;
  const words = `bed ${n} moist`;
  let topicUrl = '';
  await step(page, '17-forget-written', async () => {
    await page.evaluate((id) => { location.hash = `#/session/${id}`; }, chat);
    await page.waitForFunction((t) => document.getElementById('session-thread')?.textContent.includes(t), words, { timeout: TIMEOUT })
      .catch(() => { throw new Error(`${chat} does not open`); });
    await page.click('#write-now');
    await visible(page, '#write-result', 'the outcome of Write now');
    const said = await page.locator('#write-result').textContent();
    check(/^Wrote /.test(said), `Write now said: "${said}"`);
    await page.locator('#session-thread button.link').first().click();
    await visible(page, '#record', 'the record of the question');
    // The record's Forget: its plan, then Cancel changes nothing.
    await page.click('#forget-record');
    await visible(page, '#forget-list', "the record's plan");
    const plan = await page.locator('#forget-list').textContent();
    check(/Records1 \(archived/.test(plan), `the record's plan reads: ${plan}`);
    await page.click('#forget-cancel');
    await visible(page, '#record', 'the record after Cancel');
    check((await page.locator('#record .record-text').first().textContent()).includes(words), 'Cancel changed the record');
    await page.locator('#record-cited .row.cite').first().click();
    await page.waitForFunction((t) => document.getElementById('preview')?.textContent.includes(t), words, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the journal does not show the block'); });
    topicUrl = page.url();
    // The block's Forget: its plan names the block, then Cancel.
    const block = page.locator('#preview p', { hasText: words }).locator('.forget-block');
    check((await block.count()) === 1, 'the block has no Forget action');
    const id = await block.getAttribute('data-block');
    await block.click();
    await visible(page, '#forget-list', "the block's plan");
    const blockPlan = await page.locator('#forget-list').textContent();
    check(blockPlan.includes(`^${id}`) && /Records0 /.test(blockPlan), `the block's plan reads: ${blockPlan}`);
    await page.click('#forget-cancel');
    await page.waitForFunction((t) => document.getElementById('preview')?.textContent.includes(t), words, { timeout: TIMEOUT })
      .catch(() => { throw new Error('Cancel changed the topic'); });
  });
  await step(page, '17b-forget-session', async () => {
    await page.evaluate((id) => { location.hash = `#/session/${id}`; }, chat);
    await visible(page, '#forget-session', "the session's Forget");
    await page.click('#forget-session');
    await visible(page, '#forget-list', "the session's plan");
    const terms = await page.locator('#forget-list dt').allTextContents();
    const values = await page.locator('#forget-list dd').allTextContents();
    const plan = Object.fromEntries(terms.map((t, i) => [t, values[i]]).filter(([t]) => t !== 'File'));
    const files = terms.map((t, i) => (t === 'File' ? values[i] : null)).filter(Boolean);
    check(plan.Sessions === chat && /^2 /.test(plan.Messages) && /^2 /.test(plan.Records) && /^[1-9]\d*: \^/.test(plan.Blocks || ''), `the plan reads ${JSON.stringify(plan)}`);
    check(files.some((f) => /^topics\/journal\//.test(f)) && /^[1-9]\d* rewritten$/.test(plan['Git commits'] || ''), `the plan's files and commits: ${JSON.stringify([files, plan])}`);
    check((await page.locator('#forget-confirm').textContent()) === 'Forget all of this, everywhere', 'the confirm button does not say what it does');
    check((await page.locator('#session-thread').count()) === 0, 'the thread is shown beside the plan');
    await noOverflow(page);
    await shot(page, '17b-forget-plan');
    await page.click('#forget-confirm');
    await visible(page, '#forget-done', 'what the forget removed');
    check(/^Forgotten everywhere: 2 messages, 2 records, /.test(await page.locator('#forget-done').textContent()), 'the outcome does not say what went');
    await page.waitForFunction(() => document.querySelectorAll('#session-thread .turn-item.gone').length === 2, null, { timeout: TIMEOUT })
      .catch(() => { throw new Error('the turns are not shown as forgotten'); });
    await visible(page, '#head-title .badge.gone', 'the forgotten badge of the session');
    check((await page.locator('#forget-session').count()) === 0, 'a forgotten session still offers Forget');
    const shown = await page.evaluate(() => document.body.textContent);
    check(!shown.includes(words), `the page still shows the session's turns (${words})`);
  });
  await step(page, '17c-forget-topic', async () => {
    // The journal's topic no longer shows the block: it is gone with it when the block was all
    // it held, and otherwise shows the rest.
    const topic = decodeURIComponent(/#\/topic\/([^/]+)/.exec(topicUrl)[1]);
    await section(page, 'topics');
    await visible(page, '.row.topic', 'the topic list after the forget');
    const row = page.locator(`.row.topic[data-path="${topic}"]`);
    if (await row.count()) {
      await row.click();
      await visible(page, '#preview', 'the journal after the forget');
      check(!(await page.locator('#preview').textContent()).includes(words), 'the topic still shows the forgotten block');
      if (narrow()) await back(page);
    }
    await page.fill('#search', 'mulch moist July');
    await visible(page, '#search-results', 'the search after the forget');
    await page.waitForFunction(() => !document.querySelector('#search-results')?.textContent.includes('Searching'), null, { timeout: TIMEOUT });
    check(!(await page.locator('#search-results').textContent()).includes(words), 'the search still finds the forgotten turns');
    await page.fill('#search', '');
  });

  check(problems.length === 0, problems.join('\n'));

  if (w === 1280) {
    stepName = '15-no-token';
    const bare = await context.newPage();
    await bare.goto(BASE_URL.split('#')[0]);
    await visible(bare, '#gate', 'the missing-token state');
    check((await bare.locator('#gate').textContent()).includes('scriptorium serve'), 'the missing-token state does not point to `scriptorium serve`');
    await bare.screenshot({ path: path.join(ARTIFACTS, `${width}-15-no-token.png`) });
  }
  await context.close();
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  await run(browser, 1280, 800);
  await run(browser, 390, 844);
  console.log(`e2e passed at 1280 and 390 px; screenshots in ${ARTIFACTS}`);
} catch (e) {
  await browser.close().catch(() => {});
  fail(e.message);
}
await browser.close();
