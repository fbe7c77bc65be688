package server

import (
	"bytes"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
)

// Problem types resolve. Every problem's `type` is /problems/<code>, and GET /problems/<code>
// is a page that says what the problem means and how to fix it: a client that meets a code it
// does not know, or a person reading a log, can follow the type to an answer. GET /problems/
// lists them all. The pages are written here, once, beside the one table of codes (problem.go:
// titles); TestProblemPages checks that every code the spec names has one.

// problemDoc is one problem type's page.
type problemDoc struct {
	Status []int  // the statuses it is sent with
	Means  string // what it means
	Fix    string // what to do about it
}

var problemDocs = map[string]problemDoc{
	"invalid-json": {[]int{400}, "The request body is not JSON the server can read: a syntax error, text that is not UTF-8, an escape of half a UTF-16 surrogate pair, a member name that appears twice in one object, or a body that is valid JSON but not of the shape this operation takes. `path` names the member where reading stopped.",
		"Send UTF-8 JSON of the operation's schema (see /openapi.yaml). Escape control characters, send surrogate pairs whole, and give each member of an object one name."},
	"invalid-request": {[]int{400}, "The request breaks the operation's schema: a required member missing, a value of the wrong type, a string too long, an unknown member (bodies refuse members they do not define), a `null` where none is allowed, or a number the field cannot hold (`1e999`). `path` names the member and `errors` points at it.",
		"Change the member `path` names as `detail` says; leave an optional member out rather than sending `null`. The operation's schema in /openapi.yaml lists every member, its type and its limits."},
	"invalid-parameter": {[]int{400}, "A path, query or header parameter is not valid: not an integer where one is expected, out of range, or not of its pattern.",
		"Send the parameter as /openapi.yaml describes it; `path` names it."},
	"invalid-cursor": {[]int{400}, "The paging `cursor` is not one this server issued for this query: it was changed, is from another query or tenant, or the server's cursor secret changed (FOOTPRINT_CURSOR_SECRET).",
		"Start the listing again without `cursor`, and pass each `nextCursor` back unchanged with the same query."},
	"invalid-strategy": {[]int{422}, "The memory's `strategy` has the wrong SHAPE: not an object, no `kind`, or a `hybrid` without a non-empty `strategies` array (checked recursively, with `path` naming the part).",
		"Write the strategy as an object with a `kind`, e.g. {\"kind\":\"window\",\"size\":20}; `fix` is a line that works. GET /v1/strategies describes all seven kinds."},
	"unknown-strategy": {[]int{422}, "The strategy's `kind` is not one of the seven: window, budget, summarize, topK, extract, decay, hybrid.",
		"Use one of the seven kinds; GET /v1/strategies lists them with what each does."},
	"strategy-not-for-type": {[]int{422}, "The memory's type does not accept this strategy kind (decay on a semantic memory, say). The problem lists the kinds this type accepts (`acceptedKinds`) and the types that accept this kind (`acceptingTypes`).",
		"Pick a kind from `acceptedKinds`, or a type from `acceptingTypes`. GET /v1/strategies?type=<type> lists what a type accepts."},
	"missing-requirement": {[]int{422}, "The strategy needs something this deployment or the definition does not supply: an embedder (topK), an LLM and a model (summarize; extract with extractor llm), or a store that ranks vectors. `path` names the field.",
		"Supply the missing field (`fix` shows one), configure the provider on the server (FOOTPRINT_EMBEDDERS, FOOTPRINT_LLMS), or pick a strategy whose requirements are met: GET /v1/strategies?offerable=true."},
	"invalid-field": {[]int{422}, "A field's value breaks its rule: out of range, not of its pattern, not allowed with another field, text with a NUL character, or a request the domain cannot carry out as given (a turn number beyond the highest there is, a memory that is not a corpus). `path` names the field and `detail` the rule.",
		"Change the field as `detail` says; `fix` is a value that would be accepted there, when there is one."},
	"unknown-field": {[]int{422}, "The strategy has a field its kind does not define (a misspelling, or a field of another kind).",
		"Remove the field or spell it as the kind defines it: GET /v1/strategies/{kind} lists the kind's fields with their types and defaults."},
	"embedder-mismatch": {[]int{422}, "Vectors of different models or dimensions would be compared: the memory already holds vectors of one space in this conversation (or corpus) and the request brings another. They are never compared.",
		"Use the embedder (or client embeddingModel and dimensions) the memory already holds, or define a new memory for the new embedder."},
	"invalid-vector": {[]int{422}, "A client vector cannot be used: wrong length, all zeros, or components that are not finite.",
		"Send vectors of the model's dimensions with finite, not all zero, components."},
	"idempotency-key-reused": {[]int{422}, "The Idempotency-Key was already used, within its lifetime, with a different request (another operation, path or body). Nothing was done.",
		"A retry must send the first request exactly. For a new request, use a new key (a UUID)."},
	"entry-exists": {[]int{409}, "An entry this turn would write is already stored and live, and only facts are replaced: usually a `turnNumber` that names a turn already written.",
		"Leave `turnNumber` out to write the next turn, or send a later one."},
	"memory-exists": {[]int{409}, "The tenant already has a memory with this id.",
		"Replace it with PUT /v1/memories/{id}, delete it first, or use another id. A retry of a create that succeeded is not this problem when it carries the first request's Idempotency-Key."},
	"run-exists": {[]int{409}, "A run with this id already exists.",
		"Open the new run under another id, or leave `runId` out and let the server pick one."},
	"run-finished": {[]int{409}, "The run is finished: it takes no more events, and it cannot be finished again the other way (complete vs abandoned).",
		"Open a new run for a new turn. Finishing again with the same `complete` is answered 200 and changes nothing."},
	"version-conflict": {[]int{409}, "The replace named a `version` that is not the stored one: the memory changed since it was read.",
		"GET the memory again, re-apply the change and send its current `version` (or its ETag as If-Match)."},
	"precondition-failed": {[]int{412}, "The If-Match precondition failed: the resource changed since the representation whose ETag was sent (or the tag was weak, which never matches). Nothing was stored.",
		"GET the resource again, re-apply the change and send its new ETag as If-Match."},
	"not-found": {[]int{404}, "There is no such resource for this tenant, or no such endpoint. Another tenant's resource answers the same way. Conversations are scoped by `principal`: a turn or entry written under a principal is found only with that `principal` query parameter, and the problem's detail says where the lookup looked.",
		"Check the id and, for conversation routes, the `principal`. The endpoints are listed in /openapi.yaml and browsable at /docs/."},
	"unauthorized": {[]int{401}, "The request carries no API key, or one the server does not know. The answer carries WWW-Authenticate: Bearer.",
		"Send `Authorization: Bearer <key>` with a key configured in FOOTPRINT_API_KEYS."},
	"body-too-large": {[]int{413}, "The request body is larger than the server accepts (limits.maxBodyBytes in /v1/capabilities, FOOTPRINT_MAX_BODY_BYTES).",
		"Send less in one request: split event batches, document batches or turns."},
	"unsupported-media-type": {[]int{415}, "The request body's Content-Type is not one this operation reads.",
		"Send `Content-Type: application/json` (or, for events, `application/x-ndjson`)."},
	"method-not-allowed": {[]int{405}, "The path exists but not with this method (a POST to /metrics, say).",
		"Use a method the path serves: /openapi.yaml lists each path's operations."},
	"rate-limited": {[]int{429}, "The tenant sent more requests than its rate allows (FOOTPRINT_RATE_LIMIT), or has as many open runs as allowed (FOOTPRINT_MAX_OPEN_RUNS). The RateLimit headers and Retry-After say when to come back.",
		"Wait as Retry-After says, then retry; finish runs you no longer append to."},
	"embedder-failed": {[]int{502}, "A remote embedder refused the request or answered with something unusable (bad key, unknown model, text too long, wrong dimensions). Retrying will not help. `embedder` names it, `upstreamStatus` gives the provider's status.",
		"Fix the embedder's configuration (FOOTPRINT_EMBEDDERS: model, url, dims, key_env) or the text sent."},
	"embedder-unavailable": {[]int{503}, "A remote embedder could not be reached, timed out, or kept answering 429/5xx after the server's retries. `embedder` names it; Retry-After says when to try again.",
		"Retry after Retry-After. If it persists, check the provider's health and the embedder's url."},
	"unavailable": {[]int{503}, "The server cannot reach its store right now (Postgres down, a lock timeout), or it is shutting down. Retry-After says when to try again.",
		"Retry after Retry-After; a request with an Idempotency-Key is safe to retry."},
	"internal": {[]int{500}, "Something went wrong inside the server. The body says nothing more on purpose; the server's log has the details under the problem's requestId.",
		"Retry if the request is idempotent; otherwise report the `requestId`."},
}

var problemPage = template.Must(template.New("problem").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} — footprint problem {{.Code}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em}code{background:#f3f3f3;padding:0 .2em}</style>
</head><body>
<p><a href="/problems/">footprint problem types</a></p>
<h1>{{.Title}}</h1>
<p>Problem type <code>/problems/{{.Code}}</code>, <code>code</code> <code>{{.Code}}</code>, sent with HTTP {{.Statuses}}.</p>
<h2>What it means</h2><p>{{.Means}}</p>
<h2>How to fix it</h2><p>{{.Fix}}</p>
<p>Every error of this API is <code>application/problem+json</code> (RFC 9457); switch on <code>code</code>, never on <code>detail</code>. See <a href="/docs/">the API docs</a>.</p>
</body></html>
`))

var problemIndex = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>footprint problem types</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em}code{background:#f3f3f3;padding:0 .2em}</style>
</head><body>
<h1>footprint problem types</h1>
<p>Every error of this API is <code>application/problem+json</code> (RFC 9457) whose <code>type</code> is one of these pages.</p>
<ul>{{range .}}<li><a href="/problems/{{.Code}}"><code>{{.Code}}</code></a> — {{.Title}} ({{.Statuses}})</li>
{{end}}</ul>
</body></html>
`))

type problemView struct {
	Code, Title, Statuses, Means, Fix string
}

func viewOf(code string, d problemDoc) problemView {
	s := make([]string, len(d.Status))
	for i, st := range d.Status {
		s[i] = strconv.Itoa(st)
	}
	return problemView{Code: code, Title: titles[code], Statuses: strings.Join(s, ", "), Means: d.Means, Fix: d.Fix}
}

// serveProblemPage is GET /problems/{code}: the page of one problem type; an unknown code is a
// 404 problem (whose own type resolves).
func serveProblemPage(w http.ResponseWriter, r *http.Request) {
	code := chi.URLParam(r, "code")
	d, ok := problemDocs[code]
	if !ok {
		writeProblem(w, r, newProblem(http.StatusNotFound, "not-found", "There is no problem type "+strconv.Quote(code)+"; /problems/ lists them."))
		return
	}
	writePage(w, problemPage, viewOf(code, d))
}

// serveProblemIndex is GET /problems/: every problem type, by code.
func serveProblemIndex(w http.ResponseWriter, _ *http.Request) {
	codes := make([]string, 0, len(problemDocs))
	for c := range problemDocs {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	views := make([]problemView, len(codes))
	for i, c := range codes {
		views[i] = viewOf(c, problemDocs[c])
	}
	writePage(w, problemIndex, views)
}

func writePage(w http.ResponseWriter, t *template.Template, v any) {
	var b bytes.Buffer
	_ = t.Execute(&b, v) // the templates and their data are the server's own
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(b.Bytes())
}

// ProblemsOnError makes the errors of a handler that is not ours (the docs page's asset
// server, the Prometheus handler, a plain http.ServeMux) problems like every other: a status
// of 400 or more is answered with the problem of that status instead of the handler's own
// body.
func ProblemsOnError(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&problemWriter{ResponseWriter: w, r: r}, r)
	})
}

// problemWriter passes a response through unless its status is an error, which it turns into
// a problem and whose body it drops.
type problemWriter struct {
	http.ResponseWriter
	r       *http.Request
	wrote   bool
	swallow bool
}

func (p *problemWriter) WriteHeader(status int) {
	if p.wrote {
		return
	}
	p.wrote = true
	if status < 400 {
		p.ResponseWriter.WriteHeader(status)
		return
	}
	p.swallow = true
	h := p.Header()
	for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "X-Content-Type-Options"} {
		h.Del(k)
	}
	var pr *Problem
	switch status {
	case http.StatusNotFound:
		pr = newProblem(status, "not-found", "No such page or asset. The API is described at /openapi.yaml and browsable at /docs/.")
	case http.StatusMethodNotAllowed:
		pr = newProblem(status, "method-not-allowed", p.r.Method+" is not supported on this path.")
	case http.StatusServiceUnavailable:
		pr = newProblem(status, "unavailable", "")
		pr.retryAfter = 1
	default:
		if status >= 500 {
			pr = newProblem(http.StatusInternalServerError, "internal", "")
		} else {
			pr = newProblem(http.StatusBadRequest, "invalid-request", "The request is not valid here.")
		}
	}
	writeProblem(p.ResponseWriter, p.r, pr)
}

func (p *problemWriter) Write(b []byte) (int, error) {
	if !p.wrote {
		p.WriteHeader(http.StatusOK)
	}
	if p.swallow {
		return len(b), nil
	}
	return p.ResponseWriter.Write(b)
}

// Flush lets a streaming inner handler flush through the wrapper.
func (p *problemWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.swallow {
		f.Flush()
	}
}
