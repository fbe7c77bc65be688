/**
 * footprint's TypeScript client.
 *
 * Every request and answer type comes from `./schema.ts`, which openapi-typescript generates
 * from api/openapi.yaml (never edited by hand; `make generate` regenerates it), and every call
 * goes through openapi-fetch, typed by those paths:
 *
 * ```ts
 * import { createFootprint, unwrap } from "@footprint/client";
 *
 * const fp = createFootprint({ baseUrl: "http://127.0.0.1:8080", key: process.env.FOOTPRINT_API_KEY });
 * const recall = await unwrap(fp.POST("/v1/conversations/{conversationId}/recall", {
 *   params: { path: { conversationId: "support-4821" } },
 *   body: { query: "How long do refunds take?", turn: 3 },
 * }));
 * // ... answer with recall.systemPrompt in the system prompt ...
 * // Each injection names its part of it by UTF-8 byte offsets:
 * for (const inj of recall.injections) console.log(inj.id, injectionText(recall, inj));
 * ```
 *
 * This module adds only what a generator cannot know, in the `fetch` the client calls: the API
 * key; bounded retries of 429 and 503 answers after their Retry-After; an Idempotency-Key on
 * every POST that has none, the same across its retries (a retried turn is replayed by the
 * server, never stored twice); and {@link unwrap}, which turns a problem answer into a thrown
 * {@link FootprintError} with the problem's `code`, `path`, `detail` and `fix`; and
 * {@link spanText} and {@link injectionText}, which read the part of a recall's
 * `systemPrompt` that a `PromptSpan` names (spans count UTF-8 bytes, which a JavaScript
 * string's `slice` does not).
 *
 * @module
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
/** The API's named schemas: `Schemas["TurnInput"]`, `Schemas["RecallResult"]`, ... */
export type Schemas = components["schemas"];
/** An RFC 9457 problem, as every 4xx and 5xx answer of the API is. */
export type Problem = components["schemas"]["Problem"];
/** The client: openapi-fetch's, typed by the API's paths. */
export type FootprintClient = Client<paths>;

export interface FootprintOptions {
  /** The server, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** The API key, sent as `Authorization: Bearer <key>`; leave it out for an open server. */
  key?: string;
  /** How many times a 429 or 503 answer is retried (default 3; 0: never). */
  maxRetries?: number;
  /**
   * The longest wait before one retry, in milliseconds (default 30,000): an answer whose
   * Retry-After asks for more is returned at once.
   */
  maxRetryWaitMs?: number;
  /** The fetch to send requests with (default: the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
}

/** Returns a client of the footprint server at `options.baseUrl`. */
export function createFootprint(options: FootprintOptions): FootprintClient {
  return createClient<paths>({ baseUrl: options.baseUrl, fetch: footprintFetch(options) });
}

/**
 * The fetch {@link createFootprint} gives openapi-fetch: the key, the Idempotency-Key, and the
 * retries. Exported for clients of your own making.
 */
export function footprintFetch(options: FootprintOptions): (request: Request) => Promise<Response> {
  const send = options.fetch ?? ((r: Request) => fetch(r));
  const maxRetries = Math.max(0, options.maxRetries ?? 3);
  const maxWait = options.maxRetryWaitMs ?? 30_000;
  return async (request: Request) => {
    const headers = new Headers(request.headers);
    if (options.key && !headers.has("Authorization")) headers.set("Authorization", `Bearer ${options.key}`);
    if (request.method === "POST" && !headers.has("Idempotency-Key")) {
      headers.set("Idempotency-Key", `fp-${crypto.randomUUID()}`);
    }
    const prepared = new Request(request, { headers });
    for (let attempt = 0; ; attempt++) {
      const response = await send(prepared.clone());
      if (response.status !== 429 && response.status !== 503) return response;
      if (attempt >= maxRetries) return response;
      const header = response.headers.get("Retry-After");
      const wait = header === null ? 500 * 2 ** attempt : retryAfterMs(header);
      if (wait === undefined || wait > maxWait) return response;
      await response.body?.cancel();
      await sleep(wait, request.signal);
    }
  };
}

/** A problem the server answered with, as a thrown error. Switch on `code`, never on `detail`. */
export class FootprintError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The problem's stable code, e.g. `invalid-strategy`, `rate-limited`. */
  readonly code: string;
  /** The field at fault, e.g. `strategy.strategies[1].size`. */
  readonly path?: string;
  /** What went wrong this time, for people. */
  readonly detail?: string;
  /** A value that would be accepted at `path`, when the server has one. */
  readonly fix?: unknown;
  /** The request's id, as in the server's log. */
  readonly requestId?: string;
  /** The wait the server asked for (Retry-After), in milliseconds. */
  readonly retryAfterMs?: number;
  /** The whole problem, extra members (`kinds`, `acceptedKinds`, ...) included. */
  readonly problem: Problem;

  constructor(problem: Problem, response?: Response) {
    const where = problem.path ? ` at ${problem.path}` : "";
    const fix = problem.fix === undefined ? "" : ` (fix: ${JSON.stringify(problem.fix)})`;
    super(`footprint: ${problem.status} ${problem.code}${where}: ${problem.detail ?? problem.title}${fix}`);
    this.name = "FootprintError";
    this.problem = problem;
    this.status = problem.status;
    this.code = problem.code;
    this.path = problem.path;
    this.detail = problem.detail;
    this.fix = problem.fix;
    this.requestId = problem.requestId ?? response?.headers.get("X-Request-Id") ?? undefined;
    const wait = response?.headers.get("Retry-After");
    this.retryAfterMs = wait ? retryAfterMs(wait) : undefined;
  }
}

/** A recall answer, or a receipt read back: its text is held once, in `systemPrompt`. */
export type RecallResult = Schemas["RecallResult"];
/** A part of a recall's `systemPrompt`, by UTF-8 byte offsets. */
export type PromptSpan = Schemas["PromptSpan"];

const promptBytes = new WeakMap<RecallResult, Uint8Array>();
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The part of the recall's `systemPrompt` that `span` names (a memory's, an admitted
 * candidate's or an injection's `systemSpan`), or `undefined` when there is no span or it does
 * not lie within the prompt. Spans are UTF-8 byte offsets, so the prompt is sliced as bytes
 * (encoded once per recall) and the slice decoded: `systemPrompt.slice(startByte, endByte)`
 * would be wrong as soon as the text holds a character outside ASCII.
 */
export function spanText(recall: RecallResult, span: PromptSpan | undefined): string | undefined {
  if (!span) return undefined;
  let bytes = promptBytes.get(recall);
  if (!bytes) {
    bytes = new TextEncoder().encode(recall.systemPrompt);
    promptBytes.set(recall, bytes);
  }
  const { startByte, endByte } = span;
  if (!(Number.isInteger(startByte) && Number.isInteger(endByte) && startByte >= 0 && startByte <= endByte && endByte <= bytes.length)) return undefined;
  try {
    return utf8.decode(bytes.subarray(startByte, endByte));
  } catch {
    return undefined; // not on character boundaries: no span the server sends
  }
}

/** An injection's text for the system prompt: {@link spanText} of its `inject.systemSpan`. */
export function injectionText(recall: RecallResult, injection: Schemas["Injection"]): string | undefined {
  return spanText(recall, injection.inject.systemSpan);
}

/** What an openapi-fetch call resolves to. */
export interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * Resolves to the answer of a call, or throws a {@link FootprintError} when the server
 * answered with a problem (or anything else that is not a success).
 */
export async function unwrap<T>(call: Promise<FetchResult<T>> | FetchResult<T>): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (response.ok && error === undefined) return data as NonNullable<T>;
  if (isProblem(error)) throw new FootprintError(error, response);
  // Not one of the server's problems (a proxy's page, say): the status speaks alone.
  const code = response.statusText ? response.statusText.toLowerCase().replaceAll(" ", "-") : `http-${response.status}`;
  throw new FootprintError(
    { type: "about:blank", title: response.statusText || "Error", status: response.status, code: code as Problem["code"], detail: typeof error === "string" ? error.slice(0, 200) : undefined },
    response,
  );
}

function isProblem(v: unknown): v is Problem {
  return typeof v === "object" && v !== null && typeof (v as Problem).code === "string" && typeof (v as Problem).status === "number";
}

/** Reads a Retry-After header, delay-seconds or an HTTP date, as milliseconds. */
function retryAfterMs(v: string): number | undefined {
  const seconds = Number(v.trim());
  if (v.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
