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
// live=1: a low-latency live stream. Each player runs in its low-latency
// mode at rate 1, and the page samples its live latency and counts stalls
// (state.samples, state.stalls). epoch: the packager's media time 0 on the
// wall clock (ms since 1970), for the wall-clock latency of a DASH player.
const live = params.get('live') === '1';
const epochMs = Number(params.get('epoch')) || 0;
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
  // live: one sample every 500 ms once playing: {at (ms since start of
  // playback), latency (the player's own measure, s), wall (now less the
  // wall-clock time of the playhead, s), currentTime, buffer (s ahead)}
  samples: [],
  stalls: [], // live: {at, currentTime, ms} per 'waiting' after the first 'playing'
  playingSince: 0, // Date.now() at the first 'playing'
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
  if (live) Object.assign(config, { lowLatencyMode: true, maxLiveSyncPlaybackRate: 1.5, backBufferLength: 10 });
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
  latencyOf = () => ({ latency: hls.latency, wall: hls.playingDate ? (Date.now() - hls.playingDate.getTime()) / 1000 : NaN });
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
  if (live) {
    // Low-latency DASH: dash.js picks its low-latency mode from the MPD
    // (availabilityTimeComplete=false) and its target from the MPD's
    // ServiceDescription; catch-up keeps it there. No UTCTiming in the
    // MPD: the page shares the packager's clock.
    player.updateSettings({ streaming: {
      utcSynchronization: { enabled: false },
      liveCatchup: { enabled: true, mode: 'liveCatchupModeDefault' },
    } });
  }
  player.initialize(video, src, true);
  latencyOf = () => ({ latency: player.getCurrentLiveLatency(),
    wall: epochMs ? (Date.now() - epochMs) / 1000 - video.currentTime : NaN });
}

async function playShaka() {
  await loadScript('/lib/shaka.js');
  state.version = shaka.Player.version;
  shaka.polyfill.installAll();
  if (!shaka.Player.isBrowserSupported()) throw new Error('Shaka: browser not supported');
  const player = new shaka.Player();
  await player.attach(video);
  // Low-latency mode; for DASH, the live edge from availabilityStartTime
  // and the page's clock (the packager's), not guessed from the segments.
  if (live) player.configure({ streaming: { lowLatencyMode: true }, manifest: { dash: { autoCorrectDrift: false } } });
  player.addEventListener('error', (e) => {
    const d = e.detail;
    const what = `Shaka error ${d.code} category=${d.category} data=${JSON.stringify(d.data).slice(0, 300)}`;
    (d.severity === shaka.util.Error.Severity.CRITICAL ? fatal : warn)(what);
  });
  await player.load(src);
  await video.play();
  // Shaka owns the playback rate (it resets video.playbackRate itself).
  if (rate !== 1 && !live) player.trickPlay(rate, false);
  latencyOf = () => {
    const d = player.getPlayheadTimeAsDate();
    return { latency: player.getStats().liveLatency, wall: d ? (Date.now() - d.getTime()) / 1000 : NaN };
  };
}

const players = { hls: playHls, dash: playDash, shaka: playShaka };

// latencyOf is the playing player's latency now: {latency, wall} (s).
let latencyOf = null;

// sampleLive records the latency and the buffer ahead, twice a second.
function sampleLive() {
  if (!state.playingSince || !latencyOf) return;
  const l = latencyOf();
  const b = video.buffered;
  const ahead = b.length ? b.end(b.length - 1) - video.currentTime : 0;
  if (state.samples.length < 1000) {
    state.samples.push({ at: Date.now() - state.playingSince, latency: Number(l.latency), wall: Number(l.wall),
      currentTime: video.currentTime, buffer: ahead });
  }
}
if (live) {
  setInterval(sampleLive, 500);
  let waitingSince = 0;
  video.addEventListener('waiting', () => {
    if (!state.playingSince || waitingSince) return;
    waitingSince = Date.now();
    state.stalls.push({ at: waitingSince - state.playingSince, currentTime: video.currentTime, ms: -1 });
  });
  video.addEventListener('playing', () => {
    if (waitingSince) state.stalls[state.stalls.length - 1].ms = Date.now() - waitingSince;
    waitingSince = 0;
  });
}

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
  if (!state.playingSince) state.playingSince = Date.now();
  if (playerName !== 'shaka' && !live) video.playbackRate = rate;
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
