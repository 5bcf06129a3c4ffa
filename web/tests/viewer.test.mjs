// End-to-end test of the web viewer in headless Chromium (Debian's package, driven by
// playwright-core): a real `dramatis serve` with the scripted model and real agent
// processes, the page loaded from it, a shipped scenario created and run from the page,
// Watson played from the page, and the point-of-view panel checked against the
// invariant (a line spoken where Lestrade was not is absent from his view).
//
//   node --test web/tests/viewer.test.mjs
//
// DRAMATIS_BIN: the dramatis binary (default target/release/dramatis).
// CHROMIUM: the browser (default /usr/bin/chromium).
// DRAMATIS_SCREENSHOT: where to save a screenshot of the finished page.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const web = resolve(fileURLToPath(new URL("..", import.meta.url)));
const root = resolve(web, "..");
const binary = process.env.DRAMATIS_BIN || join(process.env.CARGO_TARGET_DIR || join(root, "target"), "release", "dramatis");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const PLAYED_LINE = "I am just back from Afghanistan, and I need lodgings I can afford.";
const WHISPER = "You are sure you have seen that man before. VIEWER-WHISPER-5150";

/** Starts `dramatis serve` (with `extra` arguments) on a free port; resolves to { url, stop }. */
function startServer(dataDir, extra = []) {
  const child = spawn(
    binary,
    ["serve", "--listen", "127.0.0.1:0", "--scripted", "builtin", "--data-dir", dataDir, "--viewer-dir", web, ...extra],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  };
  return new Promise((ok, fail) => {
    let stdout = "";
    const timer = setTimeout(() => {
      stop();
      fail(new Error(`dramatis serve did not get ready in 60 s:\n${stderr}`));
    }, 60_000);
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const ready = stdout.match(/DRAMATIS_READY (\S+)/);
      if (ready) {
        clearTimeout(timer);
        ok({ url: `http://${ready[1]}`, stop, stderr: () => stderr });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`dramatis serve exited with ${code}:\n${stderr}`));
    });
  });
}

const seqs = (page, selector) =>
  page.$$eval(selector, (lines) => lines.map((line) => Number(line.dataset.seq)));

/** A headless Chromium, closed when the test ends. */
async function launchBrowser(t) {
  const browser = await chromium.launch({
    executablePath: browserPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  t.after(() => browser.close());
  return browser;
}

test("on a service that takes tokens, the viewer asks for one and acts with its role", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "dramatis-viewer-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const tokens = join(dataDir, "tokens");
  writeFileSync(tokens, "viewer viewer-token-0123456789 vera\noperator operator-token-0123456789 olga\n");
  const server = await startServer(join(dataDir, "data"), ["--auth-tokens", tokens]);
  t.after(() => server.stop());
  const browser = await launchBrowser(t);
  const page = await browser.newPage();

  // No token: the first call is refused, and the page offers the token field.
  await page.goto(`${server.url}/viewer/`);
  await page.waitForSelector("#token-form:not([hidden])");
  assert.match(await page.textContent("#status"), /needs a token.*\(gRPC 16\)/);

  // A viewer's token typed in: the page loads; creating a world is not the viewer's.
  await page.fill("#token-input", "viewer-token-0123456789");
  await page.click("#token-form button");
  await page.waitForSelector("body[data-ready=true]");
  const scenarios = await page.$$eval("#scenario-select option", (o) => o.map((x) => x.value));
  assert.ok(scenarios.includes("study-in-scarlet"), `scenarios offered: ${scenarios}`);
  await page.click("#create-world");
  await page.waitForFunction(() => document.querySelector("#status").textContent.includes("gRPC 7"));
  assert.match(await page.textContent("#status"), /CreateWorld needs the operator role/);

  // An operator's token in the address's fragment: taken, then removed from the address.
  const operator = await browser.newPage();
  await operator.goto(`${server.url}/viewer/#token=operator-token-0123456789`);
  await operator.waitForSelector("body[data-ready=true]");
  assert.ok(!operator.url().includes("operator-token"), `the token stays in ${operator.url()}`);
  await operator.click("#create-world");
  await operator.waitForFunction(() => /created$|\(gRPC \d+\)$/.test(document.querySelector("#status").textContent));
  assert.match(await operator.textContent("#status"), /^world \S+ created$/);
  assert.notEqual(await operator.inputValue("#world-select"), "", "the new world is open");
});

test("the viewer runs a shipped scenario, plays Watson, and keeps each point of view private", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "dramatis-viewer-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await startServer(dataDir);
  t.after(() => server.stop());
  const browser = await launchBrowser(t);
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 } });
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });

  // Load the page; the scenario list comes from ListScenarios over gRPC-Web.
  await page.goto(`${server.url}/viewer/`);
  await page.waitForSelector("body[data-ready=true]");
  const scenarios = await page.$$eval("#scenario-select option", (o) => o.map((x) => x.value));
  assert.ok(scenarios.includes("study-in-scarlet"), `scenarios offered: ${scenarios}`);

  // Create a world from the shipped scenario.
  await page.selectOption("#scenario-select", "study-in-scarlet");
  await page.click("#create-world");
  await page.waitForFunction(() => document.querySelector("#world-select").value !== "");
  await page.waitForSelector("#pov-tabs button[data-character=lestrade]");
  const places = await page.$$eval("#map [data-location]", (g) => g.map((x) => x.dataset.location));
  assert.deepEqual(places.sort(), ["baker-street", "barts-lab", "criterion", "lauriston-gardens", "scotland-yard"]);

  // Play Watson from the page: claim, run the first scene, answer the turn offered.
  await page.selectOption("#play-character", "watson");
  await page.click("#claim");
  await page.waitForSelector("#play-log li.notice:has-text('You are playing John Watson')");
  await page.click("#run-scene");
  await page.waitForSelector("#act-form:not([hidden])", { timeout: 60_000 });
  const frame = await page.textContent("#turn-frame");
  assert.match(frame, /^Your turn at the Criterion Bar with Stamford/);
  await page.fill("#act-text", PLAYED_LINE);
  await page.click("#act-send");
  const played = page.locator("#transcript li[data-speaker=watson]", { hasText: PLAYED_LINE });
  await played.waitFor({ timeout: 30_000 });
  const playedSeq = Number(await played.getAttribute("data-seq"));
  // Watson's own stream carries his line (he perceives what he says).
  await page.locator("#play-log li[data-speaker=watson]", { hasText: PLAYED_LINE }).waitFor();
  await page.click("#leave");

  // The director whispers to Watson from its panel: one event, marked, Watson's alone.
  await page.selectOption("#direct-to", "to:watson");
  await page.fill("#direct-text", WHISPER);
  await page.click("#direct-form button[type=submit]");
  const whisper = page.locator("#transcript li.director", { hasText: WHISPER });
  await whisper.waitFor();
  assert.match(await whisper.textContent(), /^director → watson: /);

  // Run the rest; lines appear as they are spoken.
  await page.waitForSelector("#run-all:not([disabled])", { timeout: 60_000 });
  await page.click("#run-all");
  await page.waitForSelector("body[data-status=finished]", { timeout: 180_000 });
  await page.waitForSelector("#transcript li.scene-end[data-scene='4']");
  const speeches = await seqs(page, "#transcript li.speech");
  assert.ok(speeches.length >= 12, `only ${speeches.length} lines in the transcript`);
  const sceneStarts = await page.$$eval("#transcript li.scene-start", (l) => l.map((x) => Number(x.dataset.scene)));
  assert.deepEqual(sceneStarts, [1, 2, 3, 4]);

  // Lines spoken where Lestrade was not (the Criterion and the laboratory).
  const elsewhere = await seqs(page, "#transcript li.speech[data-scene='1'], #transcript li.speech[data-scene='2']");
  assert.ok(elsewhere.length >= 4 && elsewhere.includes(playedSeq));
  const lestradeLines = await seqs(page, "#transcript li[data-speaker=lestrade]");
  assert.ok(lestradeLines.length >= 1, "Lestrade never spoke");
  const lastLestrade = Math.max(...lestradeLines);

  // Lestrade's point of view: his own last line arrives (the stream is in order, so
  // everything before it has too), and none of the lines spoken elsewhere.
  await page.click("#pov-tabs button[data-character=lestrade]");
  await page.waitForSelector(`#pov[data-character=lestrade] li[data-seq='${lastLestrade}']`);
  const lestradeView = await seqs(page, "#pov li[data-seq]");
  for (const seq of elsewhere) assert.ok(!lestradeView.includes(seq), `Lestrade's view holds line ${seq}`);
  assert.ok(!(await page.textContent("#pov")).includes(PLAYED_LINE));
  assert.ok(!(await page.textContent("#pov")).includes(WHISPER), "Lestrade's view holds the whisper");

  // Watson's point of view holds them, his played line included.
  await page.click("#pov-tabs button[data-character=watson]");
  await page.waitForSelector(`#pov[data-character=watson] li[data-seq='${playedSeq}']`);
  const watsonView = await seqs(page, "#pov li[data-seq]");
  assert.ok(elsewhere.every((seq) => watsonView.includes(seq)), "Watson's view lacks lines he heard");
  await page.locator("#pov li.director", { hasText: WHISPER }).waitFor();
  assert.ok(watsonView.length < (await seqs(page, "#transcript li[data-seq]")).length);

  // Thoughts are private: the transcript shows everyone's, Watson's view only his own.
  const foreignThoughts = await page.$$eval("#pov li[data-speaker]:not([data-speaker=watson]) .thought", (t) => t.length);
  assert.equal(foreignThoughts, 0);

  // A line of his view, clicked, is the moment he is asked as of.
  const firstSeen = watsonView[0];
  await page.click(`#pov li[data-seq='${firstSeen}']`);
  assert.equal(await page.inputValue("#ask-as-of"), String(firstSeen));
  await page.fill("#ask-question", "Where are you?");
  await page.click("#ask-form button[type=submit]");
  await page.waitForFunction(
    (seq) => document.querySelector("#ask-answer").textContent.includes(`(as of event ${seq})`),
    firstSeen,
  );

  assert.deepEqual(errors, [], "the page reported errors");
  const failed = await page.$eval("#status", (status) => status.classList.contains("error"));
  assert.ok(!failed, `the page shows an error: ${await page.textContent("#status")}`);
  if (process.env.DRAMATIS_SCREENSHOT) {
    await page.screenshot({ path: process.env.DRAMATIS_SCREENSHOT });
  }

  // The address names the world and point of view open, and opens them elsewhere.
  const firstWorld = await page.inputValue("#world-select");
  assert.ok(page.url().endsWith(`#world=${firstWorld}&pov=watson`), `the address is ${page.url()}`);
  const linkedPage = await browser.newPage();
  await linkedPage.goto(`${server.url}/viewer/#world=${firstWorld}&pov=lestrade`);
  await linkedPage.waitForSelector("body[data-ready=true]");
  assert.equal(await linkedPage.inputValue("#world-select"), firstWorld, "the linked world is open");
  await linkedPage.waitForSelector(`#pov[data-character=lestrade] li[data-seq='${lastLestrade}']`);
  const linkedView = await seqs(linkedPage, "#pov li[data-seq]");
  assert.deepEqual(linkedView, lestradeView, "the linked point of view is Lestrade's");

  // A fork from an event's button opens a new world holding the events up to it.
  const forkAt = Number(await linkedPage.getAttribute("#transcript li.scene-start[data-scene='2']", "data-seq"));
  await linkedPage.click("#transcript li.scene-start[data-scene='2'] button.fork");
  // The status says so once the new world is open (its transcript cleared and followed).
  await linkedPage.waitForFunction(() => /^forked at event/.test(document.querySelector("#status").textContent));
  assert.notEqual(await linkedPage.inputValue("#world-select"), firstWorld);
  await linkedPage.waitForSelector(`#transcript li[data-seq='${forkAt}']`);
  assert.deepEqual(await seqs(linkedPage, "#transcript li[data-seq]"), Array.from({ length: forkAt }, (_, i) => i + 1));
  assert.match(await linkedPage.textContent("#status"), new RegExp(`^forked at event ${forkAt}: world `));
  assert.equal(await linkedPage.textContent("#branches"), `branch of ${firstWorld} after event ${forkAt}`);
  // Its last line asked again: another new world, from the panel.
  const forked = await linkedPage.inputValue("#world-select");
  await linkedPage.click("#regenerate");
  await linkedPage.waitForFunction(() => /^the last line asked again: world /.test(document.querySelector("#status").textContent));
  const again = await linkedPage.inputValue("#world-select");
  assert.notEqual(again, forked, "the branch is open");
  assert.match(await linkedPage.textContent("#branches"), new RegExp(`^branch of ${forked} after event \\d+$`));
  // The world it came from lists its branches; each opens from there.
  await linkedPage.click(`#branches button.branch[data-world='${forked}']`);
  await linkedPage.waitForFunction((f) => document.querySelector("#world-select").value === f, forked);
  await linkedPage.waitForSelector(`#branches button.branch[data-world='${again}']`);
  assert.match(
    await linkedPage.textContent("#branches"),
    new RegExp(`^branch of ${firstWorld} after event ${forkAt} · branches: ${again} \\(after event \\d+\\)$`),
  );
  await linkedPage.close();

  // Another world (the open sandbox) replaces the panels; going back restores them.
  const firstLines = (await seqs(page, "#transcript li[data-seq]")).length;
  await page.selectOption("#scenario-select", "lamplighters-ledger");
  await page.click("#create-world");
  await page.waitForFunction((first) => {
    const picked = document.querySelector("#world-select").value;
    return picked !== "" && picked !== first;
  }, firstWorld);
  await page.waitForSelector("#pov-tabs button[data-character=varga]");
  assert.equal(await page.$$eval("#transcript li", (l) => l.length), 0, "a new world starts empty");
  assert.match(await page.textContent("#world-info"), /^The Lamplighter's Ledger — round 1 of 6/);
  const places2 = await page.$$eval("#map [data-location]", (g) => g.length);
  assert.equal(places2, 4);
  await page.selectOption("#world-select", firstWorld);
  await page.waitForFunction(
    (n) => document.querySelectorAll("#transcript li[data-seq]").length === n,
    firstLines,
  );
  assert.ok(!(await page.$("#pov-tabs button[data-character=varga]")), "the sandbox's cast is gone");
  assert.deepEqual(errors, [], "the page reported errors");
});
