// Plays one stream with one player and publishes what happened in
// window.playerState, which driver.mjs polls. No framework, no build step:
// the player libraries are plain scripts served from node_modules.
'use strict';

const params = new URLSearchParams(location.search);
const playerName = params.get('player');
const src = params.get('src');
// Faster than real time keeps the suite short; players fetch the same.
const rate = Number(params.get('rate')) || 1;
// cmcd=header: the player sends CTA-5004 CMCD in the CMCD-Request, -Object,
// -Session and -Status headers, which are not CORS-safelisted: every media
// request is then preflighted.
const cmcdHeaders = params.get('cmcd') === 'header';
// seek=S: once playback passes 1 s, jump to S seconds (state.seeked), so
// the player fetches segments it had not reached through the same URLs.
const seekTo = Number(params.get('seek')) || 0;
const video = document.getElementById('video');
const statusLine = document.getElementById('status');

const state = {
  player: playerName,
  src,
  ready: false,
  fatal: [],   // errors after which the player gives up
  warnings: [], // errors the player says it recovers from
  version: '',
  currentTime: 0,
  seeked: false, // the seek was made, and playback went on from there
};
window.playerState = state;

function fatal(what) {
  state.fatal.push(String(what));
  render();
}

function warn(what) {
  if (state.warnings.length < 20) state.warnings.push(String(what));
}

function render() {
  state.currentTime = video.currentTime;
  statusLine.textContent = `${playerName} ${state.version}  t=${video.currentTime.toFixed(2)}s` +
    `  ${video.videoWidth}x${video.videoHeight}\n${src}` +
    (state.fatal.length ? `\nFATAL: ${state.fatal.join('; ')}` : '');
}

function loadScript(url) {
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = url;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`cannot load ${url}`));
    document.head.appendChild(s);
  });
}

async function playHls() {
  await loadScript('/lib/hls.js');
  state.version = Hls.version;
  if (!Hls.isSupported()) throw new Error('hls.js: MediaSource not supported');
  const config = { enableWorker: true };
  if (cmcdHeaders) config.cmcd = { useHeaders: true, sessionId: 'playertest', contentId: 'fixture' };
  const hls = new Hls(config);
  hls.on(Hls.Events.ERROR, (_, d) => {
    const what = `${d.type}/${d.details}` + (d.response ? ` status=${d.response.code}` : '') +
      (d.error ? `: ${d.error.message}` : '');
    (d.fatal ? fatal : warn)(what);
  });
  hls.on(Hls.Events.MANIFEST_PARSED, () => { video.play().catch((e) => warn(`play(): ${e}`)); });
  hls.loadSource(src);
  hls.attachMedia(video);
}

async function playDash() {
  await loadScript('/lib/dash.js');
  const player = dashjs.MediaPlayer().create();
  state.version = player.getVersion();
  const ev = dashjs.MediaPlayer.events;
  // dash.js raises ERROR only for errors it does not recover from.
  player.on(ev.ERROR, (e) => {
    const err = e.error || {};
    fatal(`dash.js error ${err.code}: ${err.message}`);
  });
  player.on(ev.PLAYBACK_ERROR, (e) => fatal(`dash.js playback error: ${e.error && e.error.message}`));
  if (cmcdHeaders) {
    // dash.js 5.2 spells the mode 'headers' (its index.d.ts still says 'header').
    player.updateSettings({ streaming: { cmcd: { enabled: true, mode: 'headers', sid: 'playertest', cid: 'fixture' } } });
  }
  player.initialize(video, src, true);
}

async function playShaka() {
  await loadScript('/lib/shaka.js');
  state.version = shaka.Player.version;
  shaka.polyfill.installAll();
  if (!shaka.Player.isBrowserSupported()) throw new Error('Shaka: browser not supported');
  const player = new shaka.Player();
  await player.attach(video);
  player.addEventListener('error', (e) => {
    const d = e.detail;
    const what = `Shaka error ${d.code} category=${d.category} data=${JSON.stringify(d.data).slice(0, 300)}`;
    (d.severity === shaka.util.Error.Severity.CRITICAL ? fatal : warn)(what);
  });
  await player.load(src);
  await video.play();
  // Shaka owns the playback rate (it resets video.playbackRate itself).
  if (rate !== 1) player.trickPlay(rate, false);
}

const players = { hls: playHls, dash: playDash, shaka: playShaka };

video.addEventListener('error', () => {
  const e = video.error;
  fatal(`video element error ${e && e.code}: ${e && e.message}`);
});
video.addEventListener('timeupdate', render);
let seekIssued = false;
video.addEventListener('timeupdate', () => {
  if (!seekTo) return;
  if (!seekIssued && video.currentTime >= 1) {
    seekIssued = true;
    video.currentTime = seekTo;
  } else if (seekIssued && !state.seeked && video.currentTime >= seekTo && !video.seeking) {
    state.seeked = true;
  }
});
video.addEventListener('playing', () => {
  if (playerName !== 'shaka') video.playbackRate = rate;
});
setInterval(render, 250);

(async () => {
  const play = players[playerName];
  if (!play) throw new Error(`unknown player ${playerName}`);
  state.ready = true;
  await play();
})().catch((e) => {
  state.ready = true;
  fatal(e && e.stack ? e.stack.split('\n')[0] : e);
});
