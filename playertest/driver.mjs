// driver.mjs plays segorigin streams in Debian's headless Chromium and
// reports, per case, whether playback passed the target time without a fatal
// player error, and every request the page made to the media origin (with its
// Range header, status, Content-Range and a hash of the body). It judges only
// playback; the Go test (browser_test.go) checks the requests against the
// files on disk.
//
//   node driver.mjs CASES.json > RESULTS.json
//
// CASES.json: {"outDir": "...", "targetSeconds": 4, "timeoutMs": 30000, "rate": 2,
//              "cases": [{"name", "player": "hls|dash|shaka", "src",
//                         "expectFail": false, "cmcd": ""|"header", "seek": 0}]}
//
// seek > 0: once playback passes 1 s the page seeks to seek seconds, and
// the case passes when playback then passes seek + 1.
//
// live: true (with "durationMs" and "epochMs"): a low-latency live stream.
// The case waits for playback to start (within timeoutMs), then lets it
// play durationMs while the page samples its latency and stalls; it
// reports them ("samples", "stalls") and the Go test judges them. With
// "parallel": true at the top, the cases run at once, each in its own
// context.
//
// The test page and the player libraries are served by a static server on
// another loopback port, so the media is always cross-origin. One browser
// serves every case; each case gets a fresh context (no shared cache).
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const chromiumPath = '/usr/bin/chromium'; // Debian's; never a downloaded browser
const chromiumArgs = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// What the static server may send: the page and one script per player.
const files = {
  '/': 'page/index.html',
  '/index.html': 'page/index.html',
  '/player.js': 'page/player.js',
  '/lib/hls.js': 'node_modules/hls.js/dist/hls.min.js',
  '/lib/dash.js': 'node_modules/dashjs/dist/modern/umd/dash.all.min.js',
  '/lib/shaka.js': 'node_modules/shaka-player/dist/shaka-player.compiled.js',
};
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };

function log(...a) { process.stderr.write(`driver: ${a.join(' ')}\n`); }

function startPageServer() {
  const srv = createServer((req, res) => {
    const pathname = new URL(req.url, 'http://x').pathname;
    if (pathname === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    const rel = files[pathname];
    if (!rel || req.method !== 'GET') {
      res.writeHead(404).end('not found\n');
      return;
    }
    const path = join(here, rel);
    res.writeHead(200, {
      'Content-Type': types[extname(path)] || 'application/octet-stream',
      'Content-Length': statSync(path).size,
      'Cache-Control': 'no-store',
    });
    createReadStream(path).pipe(res);
  });
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

// recordRequests logs every request of ctx to mediaOrigin. finish() stops
// recording, waits for the bodies being hashed and returns the records.
// A live player goes on asking until its page closes: a response that
// arrives after finish(), or whose headers or body can no longer be read
// because the context closed, is left out; its failed read must not end
// the driver as an unhandled rejection.
function recordRequests(ctx, mediaOrigin) {
  const records = [];
  const pending = [];
  let done = false;
  const isMedia = (u) => u.startsWith(mediaOrigin + '/');
  ctx.on('response', (resp) => {
    const req = resp.request();
    if (done || !isMedia(req.url())) return;
    pending.push((async () => {
      const rh = await req.allHeaders();
      const h = await resp.allHeaders();
      const tm = req.timing();
      const rec = {
        sent: Math.round(tm.startTime), ttfb: Math.round(tm.responseStart), url: req.url(), method: req.method(), range: rh['range'] || '', ifRange: rh['if-range'] || '',
        status: resp.status(), contentRange: h['content-range'] || '', contentLength: h['content-length'] || '',
        contentEncoding: h['content-encoding'] || '',
        allowOrigin: h['access-control-allow-origin'] || '', exposeHeaders: h['access-control-expose-headers'] || '',
        cmcd: ['cmcd-request', 'cmcd-object', 'cmcd-session', 'cmcd-status'].filter((k) => rh[k]).map((k) => `${k}: ${rh[k]}`),
        bodyLength: -1, sha256: '',
      };
      if (req.method() === 'GET' && resp.status() < 300) {
        try {
          const body = await resp.body();
          rec.bodyLength = body.length;
          rec.sha256 = createHash('sha256').update(body).digest('hex');
          if (/\.(m3u8|mpd)$/.test(new URL(req.url()).pathname)) rec.text = body.toString('utf8');
        } catch (e) {
          rec.bodyError = String(e.message || e).split('\n')[0];
        }
      }
      if (!done) records.push(rec);
    })().catch(() => {}));
  });
  ctx.on('requestfailed', (req) => {
    if (done || !isMedia(req.url())) return;
    records.push({ url: req.url(), method: req.method(), range: req.headers()['range'] || '',
      failure: (req.failure() || {}).errorText || 'failed' });
  });
  return async () => {
    await Promise.allSettled(pending);
    done = true;
    return records;
  };
}

async function runCase(browser, pageBase, c, cfg) {
  const started = Date.now();
  const mediaOrigin = new URL(c.src).origin;
  const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 480, height: 320 } });
  const finish = recordRequests(ctx, mediaOrigin);
  const page = await ctx.newPage();
  const console = [];
  page.on('console', (m) => { if (m.type() === 'error' && console.length < 20) console.push(m.text()); });
  page.on('pageerror', (e) => { if (console.length < 20) console.push(`pageerror: ${e.message}`); });
  const result = { name: c.name, player: c.player, src: c.src, passed: false };
  try {
    await page.goto(`${pageBase}/index.html?player=${c.player}&rate=${cfg.rate}&cmcd=${c.cmcd || ''}&seek=${c.seek || 0}` +
      `&live=${c.live ? 1 : 0}&epoch=${c.epochMs || 0}&src=${encodeURIComponent(c.src)}`);
    if (c.live) {
      await playLive(page, c, cfg, result);
    } else {
      const goal = c.seek ? c.seek + 1 : cfg.targetSeconds;
      const target = c.expectFail ? 1e9 : goal;
      try {
        await page.waitForFunction(
          ([t, seek]) => window.playerState && (window.playerState.fatal.length > 0 ||
            ((!seek || window.playerState.seeked) && window.playerState.currentTime >= t)),
          [target, c.seek || 0], { timeout: cfg.timeoutMs, polling: 100 });
      } catch (e) {
        result.timeout = `no progress past the target within ${cfg.timeoutMs} ms`;
      }
      const st = await page.evaluate(() => ({ ...window.playerState, currentTime: document.getElementById('video').currentTime,
        width: document.getElementById('video').videoWidth, height: document.getElementById('video').videoHeight }));
      Object.assign(result, { version: st.version, currentTime: st.currentTime, fatal: st.fatal,
        warnings: st.warnings, videoWidth: st.width, videoHeight: st.height, seeked: !!st.seeked });
      result.passed = c.expectFail ? st.fatal.length > 0 :
        (st.fatal.length === 0 && st.currentTime >= goal && (!c.seek || !!st.seeked));
      if (!c.expectFail) {
        result.screenshot = join(cfg.outDir, `${c.name.replace(/[^A-Za-z0-9_.-]+/g, '_')}.png`);
        await page.screenshot({ path: result.screenshot });
      }
    }
  } catch (e) {
    result.error = String(e.message || e).split('\n')[0];
  }
  result.console = console;
  result.requests = await finish();
  await ctx.close();
  result.elapsedMs = Date.now() - started;
  const ranged = result.requests.filter((r) => r.range).length;
  log(`${c.name}: ${result.passed ? 'ok' : 'FAIL'} t=${(result.currentTime || 0).toFixed(2)}s`,
    `requests=${result.requests.length} ranged=${ranged} ${result.elapsedMs}ms`,
    result.fatal && result.fatal.length ? `fatal=${JSON.stringify(result.fatal)}` : '');
  return result;
}

// playLive waits for a live case to start playing, lets it play
// c.durationMs (ending early on a fatal error), and copies the page's
// samples and stalls into result.
async function playLive(page, c, cfg, result) {
  try {
    await page.waitForFunction(() => window.playerState && (window.playerState.fatal.length > 0 || window.playerState.playingSince > 0),
      null, { timeout: cfg.timeoutMs, polling: 100 });
  } catch (e) {
    result.timeout = `not playing within ${cfg.timeoutMs} ms`;
  }
  const until = Date.now() + c.durationMs;
  while (!result.timeout && Date.now() < until) {
    await page.waitForTimeout(Math.min(1000, until - Date.now()));
    if (await page.evaluate(() => window.playerState.fatal.length > 0)) break;
  }
  const st = await page.evaluate(() => ({ ...window.playerState, currentTime: document.getElementById('video').currentTime,
    width: document.getElementById('video').videoWidth, height: document.getElementById('video').videoHeight }));
  Object.assign(result, { version: st.version, currentTime: st.currentTime, fatal: st.fatal, warnings: st.warnings,
    videoWidth: st.width, videoHeight: st.height, samples: st.samples, stalls: st.stalls,
    playedMs: st.playingSince ? Date.now() - st.playingSince : 0 });
  result.passed = st.fatal.length === 0 && !result.timeout;
  result.screenshot = join(cfg.outDir, `${c.name.replace(/[^A-Za-z0-9_.-]+/g, '_')}.png`);
  await page.screenshot({ path: result.screenshot });
}

async function main() {
  const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  cfg.targetSeconds ??= 4;
  cfg.timeoutMs ??= 30000;
  cfg.rate ??= 1;
  mkdirSync(cfg.outDir, { recursive: true });
  const srv = await startPageServer();
  const pageBase = `http://127.0.0.1:${srv.address().port}`;
  // launch() gives the browser a fresh temporary profile and removes it on close.
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
  const out = { browserVersion: browser.version(), pageOrigin: pageBase, results: [] };
  log(`chromium ${out.browserVersion}, page origin ${pageBase}`);
  try {
    if (cfg.parallel) {
      out.results = await Promise.all(cfg.cases.map((c) => runCase(browser, pageBase, c, cfg)));
    } else {
      for (const c of cfg.cases) out.results.push(await runCase(browser, pageBase, c, cfg));
    }
  } finally {
    await browser.close();
    srv.close();
  }
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
}

main().catch((e) => {
  log(`fatal: ${e.stack || e}`);
  process.exit(1);
});
