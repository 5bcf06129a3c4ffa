// The Dramatis web viewer: pick or create a world, watch its transcript live (word by
// word), see who is where, follow one character's point of view, interview it, or
// play it. Everything goes through the world service's gRPC-Web API.

import { connect, GrpcError } from "./grpcweb.js";

const $ = (id) => document.getElementById(id);

const view = {
  client: null,
  worldId: "",
  info: null,
  transcript: null, // the whole world's Watch stream
  pov: null, // { id, stream }
  seat: null, // { character, token, stream }
  infoTimer: null,
  opened: 0, // counts openWorld calls, so a slow one cannot write into a newer world
};

// ---------------------------------------------------------------- status line --

function say(text) {
  const status = $("status");
  status.textContent = text;
  status.classList.remove("error");
}

function fail(error) {
  const status = $("status");
  const code = error instanceof GrpcError ? ` (gRPC ${error.code})` : "";
  status.textContent = `${error.message}${code}`;
  status.classList.add("error");
  // UNAUTHENTICATED: this service takes tokens; ask for one.
  if (error instanceof GrpcError && error.code === 16) $("token-form").hidden = false;
  console.error(error);
}

// ------------------------------------------------------------------- the token --

const TOKEN_KEY = "dramatis-token";

/**
 * The bearer token for a world service started with --auth-tokens: from the address's
 * fragment (`#token=…`, which browsers never send to the server; it is then removed
 * from the address bar), else from this tab's session storage.
 */
function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token");
  if (given) {
    sessionStorage.setItem(TOKEN_KEY, given);
    fragment.delete("token");
    const rest = fragment.toString();
    history.replaceState(null, "", `${location.pathname}${location.search}${rest ? `#${rest}` : ""}`);
  }
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

// ------------------------------------------------------------- lines of a story --

/**
 * Renders transcript items into `list`: finished events replace the streaming line
 * with the same sequence number; tokens grow that streaming line.
 */
class LineList {
  /** With `forkable`, each event carries a button that forks the story there. */
  constructor(list, forkable = false) {
    this.list = list;
    this.forkable = forkable;
    this.streaming = new Map();
    this.sceneLocation = "";
  }

  clear() {
    this.list.replaceChildren();
    this.streaming.clear();
    this.sceneLocation = "";
  }

  token(chunk) {
    let line = this.streaming.get(chunk.seq);
    if (!line) {
      line = element("li", "speech streaming");
      line.dataset.seq = String(chunk.seq);
      line.dataset.speaker = chunk.speaker;
      line.append(element("span", "speaker", chunk.speaker_name || chunk.speaker), ": ");
      line.append(element("span", "text", ""));
      this.streaming.set(chunk.seq, line);
      this.#append(line);
    }
    line.querySelector(".text").textContent += chunk.text;
    this.#follow();
  }

  event(event) {
    if (event.kind === "EVENT_KIND_SCENE_START") this.sceneLocation = event.location;
    const line = renderEvent(event, this.sceneLocation);
    if (this.forkable) {
      const fork = element("button", "fork", "fork");
      fork.type = "button";
      fork.dataset.seq = String(event.seq);
      fork.title = `Fork the story here: a new world of the first ${event.seq} events`;
      line.append(fork);
    }
    const pending = this.streaming.get(event.seq);
    if (pending) {
      pending.replaceWith(line);
      this.streaming.delete(event.seq);
    } else {
      this.#append(line);
    }
    this.#follow();
  }

  notice(text) {
    this.#append(element("li", "notice", text));
    this.#follow();
  }

  #append(line) {
    this.list.append(line);
  }

  #follow() {
    const list = this.list;
    if (list.scrollHeight - list.scrollTop - list.clientHeight < 120) list.scrollTop = list.scrollHeight;
  }
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function placeName(id) {
  return view.info?.locations.find((l) => l.id === id)?.name || id;
}

/** One event as a list item; `sceneLocation` is where the scene being shown is. */
function renderEvent(event, sceneLocation) {
  const kind = event.kind.replace("EVENT_KIND_", "").toLowerCase().replace("_", "-");
  const line = element("li", kind);
  line.dataset.seq = String(event.seq);
  line.dataset.kind = kind;
  line.dataset.scene = String(event.scene_index);
  if (event.speaker) line.dataset.speaker = event.speaker;
  const who = event.speaker_name || event.speaker;
  switch (kind) {
    case "scene-start":
      line.textContent = event.text || `Scene ${event.scene_index} · ${placeName(event.location)}`;
      break;
    case "scene-end":
      line.textContent = event.text ? `— ${event.text}` : "— end of scene";
      break;
    case "speech": {
      line.append(element("span", "speaker", who));
      if (event.target) line.append(element("span", "target", ` → ${event.target_name || event.target}`));
      line.append(": ", element("span", "text", event.text));
      break;
    }
    case "action":
      withSpeaker(line, who, event.text);
      break;
    case "movement": {
      const where = event.destination ? placeName(event.destination) : "";
      const rounds = event.travel_rounds ? ` (${event.travel_rounds} round${event.travel_rounds === 1 ? "" : "s"} on the road)` : "";
      withSpeaker(line, who, `${event.text || `leaves for ${where}`}${rounds}`);
      break;
    }
    default:
      // The narrator may set something happening away from the scene being shown.
      if (event.location && sceneLocation && event.location !== sceneLocation) {
        line.append(element("span", "elsewhere", `Meanwhile at ${placeName(event.location)}: `));
      }
      line.append(element("span", "text", event.text));
  }
  if (event.director) {
    line.classList.add("director");
    const to = (event.perceiver_names?.length ? event.perceiver_names : event.perceivers || []).join(", ");
    line.prepend(element("span", "director-mark", `director → ${to || "no one"}: `));
  }
  if (event.thought) line.append(element("span", "thought", `(thinks: ${event.thought})`));
  return line;
}

/** "Name does something": the name in bold once, whether or not the text starts with it. */
function withSpeaker(line, who, text) {
  const rest = who && text.startsWith(who) ? text.slice(who.length) : ` ${text}`;
  line.append(element("span", "speaker", who), element("span", "text", rest));
}

const transcript = new LineList($("transcript"), true);
const povLines = new LineList($("pov"));
const playLines = new LineList($("play-log"));

// ------------------------------------------------------------------ the world --

async function loadScenarios() {
  const { scenarios } = await view.client.unary("ListScenarios", {});
  const select = $("scenario-select");
  select.replaceChildren(
    ...scenarios.map((s) => {
      const option = element("option", "", `${s.title || s.name} (${s.name})`);
      option.value = s.name;
      option.title = s.description;
      return option;
    }),
  );
}

async function loadWorlds(select) {
  const { worlds } = await view.client.unary("ListWorlds", {});
  view.worlds = worlds;
  const picker = $("world-select");
  picker.replaceChildren(
    element("option", "", worlds.length ? "— choose —" : "— none yet —"),
    ...worlds.map((w) => {
      const option = element("option", "", `${w.title || w.scenario} · ${w.world_id.slice(0, 8)}`);
      option.value = w.world_id;
      return option;
    }),
  );
  picker.firstChild.value = "";
  const wanted = select ?? view.worldId;
  if (wanted && worlds.some((w) => w.world_id === wanted)) picker.value = wanted;
}

function closeStreams() {
  view.transcript?.cancel();
  view.transcript = null;
  view.pov?.stream.cancel();
  view.pov = null;
  leaveSeat();
}

// ---------------------------------------------------------------- links --------

/**
 * The world and point of view an address asks for: `#world=ID&pov=CHARACTER` (a
 * fragment, which browsers never send to the server), or the older `?world=ID`.
 */
function linked() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const query = new URL(location.href).searchParams;
  return { world: fragment.get("world") || query.get("world") || "", pov: fragment.get("pov") || "" };
}

/** Writes the open world and point of view into the address, so it can be shared. */
function writeLink() {
  const url = new URL(location.href);
  url.searchParams.delete("world");
  const fragment = new URLSearchParams();
  if (view.worldId) fragment.set("world", view.worldId);
  if (view.worldId && view.pov) fragment.set("pov", view.pov.id);
  url.hash = fragment.toString();
  history.replaceState(null, "", url);
}

async function openWorld(worldId, pov = "") {
  closeStreams();
  const opening = ++view.opened;
  view.worldId = worldId;
  view.info = null;
  transcript.clear();
  povLines.clear();
  playLines.clear();
  $("pov-tabs").replaceChildren();
  $("ask-answer").textContent = "";
  writeLink();
  if (!worldId) {
    renderInfo();
    return;
  }
  await refreshInfo();
  if (opening !== view.opened) return; // another world was chosen meanwhile
  const stream = view.client.stream("Watch", { world_id: worldId, from_seq: 1 }, (message) => {
    if (view.transcript !== stream) return;
    if (message.item === "token") transcript.token(message.token);
    if (message.item === "event") {
      transcript.event(message.event);
      if (message.event.kind !== "EVENT_KIND_SPEECH") scheduleInfo();
    }
  });
  view.transcript = stream;
  stream.done.catch(fail);
  const asked = view.info.characters.find((c) => c.id === pov || c.name === pov);
  const first = asked || view.info.characters[0];
  if (first) showPov(first.id);
}

async function refreshInfo() {
  const worldId = view.worldId;
  if (!worldId) return;
  const info = await view.client.unary("GetWorld", { world_id: worldId });
  if (worldId !== view.worldId) return;
  view.info = info;
  renderInfo();
}

/** Refreshes the world's summary and map soon (at most a few times a second). */
function scheduleInfo() {
  if (view.infoTimer) return;
  view.infoTimer = setTimeout(() => {
    view.infoTimer = null;
    refreshInfo().catch(fail);
  }, 250);
}

function renderInfo() {
  const info = view.info;
  const running = info?.status === "WORLD_STATUS_RUNNING";
  const finished = info?.status === "WORLD_STATUS_FINISHED";
  const failed = info?.status === "WORLD_STATUS_FAILED";
  $("run-scene").disabled = !info || running || finished || failed;
  $("run-all").disabled = !info || running || finished || failed;
  document.body.dataset.status = info ? info.status.replace("WORLD_STATUS_", "").toLowerCase() : "";
  if (!info) {
    $("world-info").textContent = "";
    $("map").replaceChildren();
    $("road").textContent = "";
    return;
  }
  const unit = info.open ? "round" : "scene";
  const where = failed
    ? `could not be rebuilt: ${info.failure}`
    : finished
      ? "finished"
      : `${unit} ${info.current_scene} of ${info.total_scenes}`;
  const usage = info.usage || {};
  $("world-info").textContent =
    `${info.title} — ${where} · ${info.total_turns} turns · ${usage.llm_calls || 0} LLM calls · ` +
    `${usage.prompt_tokens || 0} prompt tokens`;
  renderMap(info);
  renderCharacterPickers(info);
  renderDirector(info);
  renderBranches(info);
}

/**
 * Where the open world branched from, and the branches made from it: each a button that
 * opens that world.
 */
function renderBranches(info) {
  const open = (world, label) => {
    const button = element("button", "branch", label);
    button.type = "button";
    button.dataset.world = world;
    return button;
  };
  const parts = [];
  if (info.forked_from) {
    parts.push("branch of ", open(info.forked_from, info.forked_from), ` after event ${info.fork_seq}`);
  }
  const children = (view.worlds || []).filter((w) => w.forked_from === info.world_id);
  if (children.length) {
    if (parts.length) parts.push(" · ");
    parts.push("branches: ");
    children.forEach((w, i) => {
      if (i) parts.push(", ");
      parts.push(open(w.world_id, `${w.world_id} (after event ${w.fork_seq})`));
    });
  }
  $("branches").replaceChildren(...parts);
}

// ------------------------------------------------------------------- director --

/** The director's choices: narrate at a place, or whisper to a character. */
function renderDirector(info) {
  const select = $("direct-to");
  const kept = select.value;
  const options = [
    ...info.locations.map((l) => [`at:${l.id}`, `narrate at ${l.name}`]),
    ...info.characters.map((c) => [`to:${c.id}`, `whisper to ${c.name}`]),
  ];
  select.replaceChildren(...options.map(([value, label]) => Object.assign(document.createElement("option"), { value, textContent: label })));
  if (options.some(([value]) => value === kept)) select.value = kept;
}

async function direct() {
  const [how, who] = $("direct-to").value.split(/:(.*)/s);
  const text = $("direct-text").value;
  const request = { world_id: view.worldId };
  if (how === "at") request.narrate = { location: who, text };
  else request.whisper = { character: who, text };
  const reply = await view.client.unary("Intervene", request);
  $("direct-text").value = "";
  say(`event ${reply.event.seq} · perceived by ${(reply.event.perceivers || []).join(", ") || "no one"}`);
}

/** Opens `world`, a new branch of the open one, with what made it in the status line. */
async function openBranch(world, what) {
  await loadWorlds(world.world_id);
  await openWorld(world.world_id);
  say(`${what}: world ${world.world_id}`);
}

// ------------------------------------------------------------------------ map --

// The map's own namespace (the HTML parser gives the <svg> element the SVG one).
const SVG = $("map").namespaceURI;

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function shorten(text, length) {
  const plain = text.replace(/^the /i, "");
  return plain.length > length ? `${plain.slice(0, length - 1)}…` : plain;
}

function renderMap(info) {
  const map = $("map");
  const places = info.locations;
  const n = places.length;
  const centre = { x: 210, y: 122 };
  const radius = n > 1 ? { x: 132, y: 80 } : { x: 0, y: 0 };
  const at = new Map(
    places.map((place, i) => {
      const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
      return [place.id, { x: centre.x + radius.x * Math.cos(angle), y: centre.y + radius.y * Math.sin(angle) }];
    }),
  );
  const nodes = [];
  for (const path of info.paths) {
    const a = at.get(path.from);
    const b = at.get(path.to);
    if (!a || !b) continue;
    nodes.push(svg("line", { class: "path", x1: a.x, y1: a.y, x2: b.x, y2: b.y }));
    nodes.push(svg("text", { class: "distance", x: (a.x + b.x) / 2 + 4, y: (a.y + b.y) / 2 - 4 }, String(path.distance)));
  }
  for (const place of places) {
    const p = at.get(place.id);
    const here = info.characters.filter((c) => c.location === place.id);
    const group = svg("g", { "data-location": place.id });
    const title = svg("title", {}, place.description || place.name);
    const box = svg("rect", {
      class: `place${place.id === info.scene_location ? " here" : ""}`,
      x: p.x - 68,
      y: p.y - 16,
      width: 136,
      height: 20 + 13 * Math.max(here.length, 1),
      rx: 6,
    });
    group.append(title, box, svg("text", { class: "place-name", x: p.x, y: p.y, "text-anchor": "middle" }, shorten(place.name, 18)));
    here.forEach((c, i) => {
      group.append(svg("text", { class: "who", x: p.x, y: p.y + 14 + 13 * i, "text-anchor": "middle", "data-character": c.id }, c.name));
    });
    nodes.push(group);
  }
  map.replaceChildren(...nodes);
  const road = info.characters
    .filter((c) => c.travelling_to)
    .map((c) => `${c.name} → ${placeName(c.travelling_to)} (arrives in round ${c.arrives_round})`);
  $("road").textContent = road.length ? `On the road: ${road.join("; ")}` : "";
}

// ------------------------------------------------------------- point of view --

function renderCharacterPickers(info) {
  const tabs = $("pov-tabs");
  const cast = info.characters.map((c) => c.id).join(",");
  if (tabs.dataset.cast !== cast) {
    tabs.dataset.cast = cast;
    tabs.replaceChildren(
      ...info.characters.map((c) => {
        const tab = element("button", "", c.name);
        tab.type = "button";
        tab.dataset.character = c.id;
        tab.addEventListener("click", () => showPov(c.id));
        return tab;
      }),
    );
    const play = $("play-character");
    play.replaceChildren(
      ...info.characters.map((c) => {
        const option = element("option", "", c.name);
        option.value = c.id;
        return option;
      }),
    );
  }
  for (const tab of tabs.children) {
    tab.setAttribute("aria-pressed", String(tab.dataset.character === view.pov?.id));
  }
}

function showPov(character) {
  if (view.pov?.id === character) return;
  view.pov?.stream.cancel();
  povLines.clear();
  $("ask-answer").textContent = "";
  $("ask-as-of").value = "";
  const stream = view.client.stream("Watch", { world_id: view.worldId, from_seq: 1, pov: character }, (message) => {
    if (view.pov?.stream !== stream) return;
    if (message.item === "token") povLines.token(message.token);
    if (message.item === "event") povLines.event(message.event);
  });
  stream.done.catch(fail);
  view.pov = { id: character, stream };
  $("pov").dataset.character = character;
  writeLink();
  if (view.info) renderCharacterPickers(view.info);
}

async function ask(question) {
  if (!view.pov || !question.trim()) return;
  const character = view.pov.id;
  const answer = $("ask-answer");
  answer.textContent = "…";
  const request = { world_id: view.worldId, character, question };
  const asOf = asOfPoint($("ask-as-of").value);
  if (asOf) request.as_of = asOf;
  const reply = await view.client.unary("Ask", request);
  if (view.pov?.id !== character) return; // the panel shows someone else now
  const when = reply.as_of_seq ? ` (as of event ${reply.as_of_seq})` : "";
  answer.textContent = `${nameOf(character)}${when}: ${reply.answer}${reply.abstained ? " (nothing in memory bore on it)" : ""}`;
}

/** The "as of" field as an AsOf message: an event's seq, `scene:N`, or nothing (now). */
function asOfPoint(text) {
  const value = text.trim();
  if (!value) return null;
  if (value.startsWith("scene:")) return { scene: value.slice("scene:".length).trim() };
  if (/^[0-9]+$/.test(value)) return { seq: Number(value) };
  throw new Error(`"as of" takes an event's number or scene:N, not ${JSON.stringify(value.slice(0, 40))}`);
}

function nameOf(id) {
  return view.info?.characters.find((c) => c.id === id)?.name || id;
}

// ----------------------------------------------------------------------- play --

function claimSeat(character) {
  leaveSeat();
  playLines.clear();
  const seat = { character, token: "", stream: null, frame: null };
  seat.stream = view.client.stream(
    "ClaimSeat",
    { world_id: view.worldId, character, timeout_ms: 120000 },
    (message) => {
      if (view.seat !== seat) return;
      switch (message.item) {
        case "claimed":
          if (view.seat !== seat) return;
          playLines.notice(`You are playing ${nameOf(message.claimed)}. Wait for your turn.`);
          break;
        case "seat":
          seat.token = message.seat;
          break;
        case "event":
          playLines.event(message.event);
          break;
        case "token":
          playLines.token(message.token);
          break;
        case "your_turn":
          offerTurn(message.your_turn);
          break;
        case "notice":
          playLines.notice(message.notice);
          $("act-form").hidden = true;
          break;
        default:
      }
    },
  );
  seat.stream.done
    .catch(fail)
    .finally(() => {
      if (view.seat === seat) leaveSeat();
    });
  view.seat = seat;
  $("claim").hidden = true;
  $("leave").hidden = false;
  $("play-character").disabled = true;
}

function leaveSeat() {
  view.seat?.stream?.cancel();
  view.seat = null;
  $("claim").hidden = false;
  $("leave").hidden = true;
  $("play-character").disabled = false;
  $("act-form").hidden = true;
}

function offerTurn(turn) {
  const frame = turn.frame;
  const others = frame.present.filter((p) => p.id !== view.seat?.character);
  $("turn-frame").textContent =
    `Your turn at ${frame.location_name}` +
    (others.length ? ` with ${others.map((p) => p.name).join(", ")}` : ", alone") +
    ` — ${Math.round(turn.timeout_ms / 1000)} s before your character's agent acts.` +
    (frame.direction ? ` (${frame.direction})` : "");
  const target = $("act-target");
  target.replaceChildren(element("option", "", "to everyone"), ...others.map((p) => {
    const option = element("option", "", `to ${p.name}`);
    option.value = p.id;
    return option;
  }));
  target.firstChild.value = "";
  const destination = $("act-destination");
  destination.replaceChildren(...frame.exits.map((id) => {
    const option = element("option", "", placeName(id));
    option.value = id;
    return option;
  }));
  $("act-send").disabled = false;
  $("act-form").hidden = false;
  // Take the keyboard only if the person is not typing elsewhere.
  if (!document.activeElement || document.activeElement === document.body) $("act-text").focus();
}

async function sendAction() {
  const seat = view.seat;
  if (!seat?.token) return;
  const kind = $("act-kind").value;
  const action = {
    kind,
    text: $("act-text").value.trim(),
    target: kind === "ACTION_KIND_MOVEMENT" ? "" : $("act-target").value,
    destination: kind === "ACTION_KIND_MOVEMENT" ? $("act-destination").value : "",
  };
  if (!action.text && kind !== "ACTION_KIND_MOVEMENT") return;
  const send = $("act-send");
  send.disabled = true;
  try {
    await view.client.unary("PlayAct", { world_id: view.worldId, seat: seat.token, action });
    $("act-text").value = "";
    $("act-form").hidden = true;
  } finally {
    send.disabled = false;
  }
}

// ------------------------------------------------------------------- controls --

async function advance(until) {
  say(until.scene_end ? "running the next scene…" : "running the story…");
  $("run-scene").disabled = true;
  $("run-all").disabled = true;
  const worldId = view.worldId;
  const reply = await view.client.unary("Advance", { world_id: worldId, ...until });
  if (view.worldId === worldId) {
    view.info = reply.world;
    renderInfo();
  }
  say(`${reply.events.length} new events`);
}

function wire() {
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
    location.reload();
  });
  $("world-select").addEventListener("change", (e) => openWorld(e.target.value).catch(fail));
  $("refresh-worlds").addEventListener("click", () => loadWorlds().catch(fail));
  $("create-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const scenario = $("scenario-select").value;
    (async () => {
      say(`creating a world from ${scenario}…`);
      const info = await view.client.unary("CreateWorld", { scenario_name: scenario });
      await loadWorlds(info.world_id);
      await openWorld(info.world_id);
      say(`world ${info.world_id} created`);
    })().catch(fail);
  });
  $("run-scene").addEventListener("click", () => advance({ scene_end: true }).catch((e) => { fail(e); scheduleInfo(); }));
  $("run-all").addEventListener("click", () => advance({ script_end: true }).catch((e) => { fail(e); scheduleInfo(); }));
  // A line of the point of view, clicked, is the moment the next question is put at.
  $("pov").addEventListener("click", (e) => {
    const seq = e.target.closest("li[data-seq]")?.dataset.seq;
    if (seq) $("ask-as-of").value = seq;
  });
  $("ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    ask($("ask-question").value).catch(fail);
  });
  $("claim-form").addEventListener("submit", (e) => {
    e.preventDefault();
    if (view.worldId) claimSeat($("play-character").value);
  });
  $("leave").addEventListener("click", leaveSeat);
  $("act-kind").addEventListener("change", (e) => {
    const moving = e.target.value === "ACTION_KIND_MOVEMENT";
    $("act-destination").hidden = !moving;
    $("act-target").hidden = moving;
    $("act-text").placeholder = moving ? "How you leave (optional)…" : "Your line…";
  });
  $("act-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sendAction().catch(fail);
  });
  $("direct-form").addEventListener("submit", (e) => {
    e.preventDefault();
    if (view.worldId) direct().catch(fail);
  });
  $("regenerate").addEventListener("click", () => {
    if (!view.worldId) return;
    view.client
      .unary("Regenerate", { world_id: view.worldId })
      .then((reply) => openBranch(reply.world, "the last line asked again"))
      .catch(fail);
  });
  $("branches").addEventListener("click", (e) => {
    const world = e.target.closest("button.branch")?.dataset.world;
    if (!world) return;
    loadWorlds(world)
      .then(() => openWorld(world))
      .catch(fail);
  });
  $("transcript").addEventListener("click", (e) => {
    const seq = e.target.closest("button.fork")?.dataset.seq;
    if (!seq || !view.worldId) return;
    view.client
      .unary("Fork", { world_id: view.worldId, at_seq: Number(seq) })
      .then((info) => openBranch(info, `forked at event ${seq}`))
      .catch(fail);
  });
}

async function main() {
  wire();
  say("connecting…");
  view.client = await connect("", takeToken());
  await loadScenarios();
  const { world: wanted, pov } = linked();
  await loadWorlds(wanted);
  if (wanted && $("world-select").value === wanted) await openWorld(wanted, pov);
  say("ready");
  document.body.dataset.ready = "true";
}

main().catch(fail);
