// A small gRPC-Web client for the Dramatis world service, on fetch.
//
// Messages are encoded and decoded by protobuf.js from the .proto sources the world
// service serves (/viewer/proto/...), so the page and the server share one schema.
// gRPC-Web carries unary and server-streaming calls only (browsers cannot stream a
// request body); the world service offers ClaimSeat + PlayAct for playing.

/* global protobuf */

const PROTO_FILES = ["dramatis/v1/common.proto", "dramatis/v1/agent.proto", "dramatis/v1/world.proto"];
const SERVICE = "dramatis.v1.World";

// Decoded messages keep the .proto field names, enums as their names, 64-bit integers
// as numbers, every field present, and each oneof's chosen field name.
const TO_OBJECT = { enums: String, longs: Number, defaults: true, oneofs: true, arrays: true };

/** A gRPC status returned by the server (or a transport failure, code 14). */
export class GrpcError extends Error {
  constructor(code, message) {
    super(message || `gRPC status ${code}`);
    this.code = code;
  }
}

/**
 * Loads the schema and returns a client of dramatis.v1.World. `token`, when given, is
 * sent as a bearer token on every call (a world service started with --auth-tokens).
 */
export async function connect(base = "", token = "") {
  const root = new protobuf.Root();
  for (const file of PROTO_FILES) {
    const response = await fetch(`${base}/viewer/proto/${file}`);
    if (!response.ok) throw new Error(`cannot load ${file}: HTTP ${response.status}`);
    protobuf.parse(await response.text(), root, { keepCase: true });
  }
  root.resolveAll();
  return new WorldClient(base, root, token);
}

class WorldClient {
  constructor(base, root, token) {
    this.base = base;
    this.root = root;
    this.token = token;
    this.service = root.lookupService(SERVICE);
  }

  /** Calls a unary method; resolves to the decoded response. */
  async unary(method, request) {
    let result = null;
    await this.#call(method, request, undefined, (message) => {
      result = message;
    });
    if (result === null) throw new GrpcError(13, `${method} returned no message`);
    return result;
  }

  /**
   * Calls a server-streaming method; `onMessage` gets each decoded message. Returns
   * `{ done, cancel }`: `done` settles when the stream ends (rejecting with a
   * GrpcError on a non-OK status), `cancel()` closes it.
   */
  stream(method, request, onMessage) {
    const abort = new AbortController();
    const done = this.#call(method, request, abort.signal, onMessage).catch((error) => {
      if (abort.signal.aborted) return;
      throw error;
    });
    return { done, cancel: () => abort.abort() };
  }

  async #call(method, request, signal, onMessage) {
    const rpc = this.service.methods[method];
    if (!rpc) throw new Error(`no method ${SERVICE}.${method}`);
    const requestType = this.root.lookupType(rpc.requestType);
    const responseType = this.root.lookupType(rpc.responseType);
    const body = frame(0, requestType.encode(requestType.fromObject(request)).finish());
    const headers = {
      "content-type": "application/grpc-web+proto",
      accept: "application/grpc-web+proto",
      "x-grpc-web": "1",
    };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let response;
    try {
      response = await fetch(`${this.base}/${SERVICE}/${method}`, {
        method: "POST",
        headers,
        body,
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new GrpcError(14, `cannot reach the world service: ${error.message}`);
    }
    if (!response.ok) throw new GrpcError(14, `HTTP ${response.status} from the world service`);
    // A call that fails at once answers with the status in the headers only.
    const headerStatus = response.headers.get("grpc-status");
    if (headerStatus !== null && headerStatus !== "0") {
      throw new GrpcError(Number(headerStatus), statusMessage(response.headers.get("grpc-message")));
    }
    const reader = response.body.getReader();
    let buffer = new Uint8Array(0);
    let offset = 0; // start of the unread part of `buffer`
    let trailers = null;
    try {
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (signal?.aborted) throw error;
          throw new GrpcError(14, `the stream broke: ${error.message}`);
        }
        if (chunk.done) break;
        buffer = concat(buffer.subarray(offset), chunk.value);
        offset = 0;
        while (buffer.length - offset >= 5) {
          const length = new DataView(buffer.buffer, buffer.byteOffset + offset, 5).getUint32(1);
          if (buffer.length - offset < 5 + length) break;
          const flags = buffer[offset];
          const payload = buffer.subarray(offset + 5, offset + 5 + length);
          offset += 5 + length;
          if (flags & 0x80) {
            trailers = parseTrailers(new TextDecoder().decode(payload));
          } else {
            onMessage(responseType.toObject(responseType.decode(payload), TO_OBJECT));
          }
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
    if (buffer.length - offset > 0) throw new GrpcError(13, "the stream ended inside a message");
    const status = trailers?.get("grpc-status") ?? headerStatus;
    if (status === null || status === undefined) throw new GrpcError(13, "the stream ended without a status");
    if (status !== "0") throw new GrpcError(Number(status), statusMessage(trailers?.get("grpc-message")));
  }
}

function statusMessage(encoded) {
  try {
    return decodeURIComponent(encoded || "");
  } catch {
    return encoded || "";
  }
}

function frame(flags, bytes) {
  const out = new Uint8Array(5 + bytes.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, bytes.length);
  out.set(bytes, 5);
  return out;
}

function concat(a, b) {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function parseTrailers(text) {
  const map = new Map();
  for (const line of text.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) map.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return map;
}
