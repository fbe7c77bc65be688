package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// dispatcher serves one tool's calls by handing each, as the REST request it stands for, to
// the REST layer's handler chain.
type dispatcher struct {
	tool      *tool
	backend   http.Handler
	requestID func(context.Context) string
	logger    *slog.Logger
	timeout   time.Duration
	calls     *prometheus.CounterVec
}

func (d *dispatcher) handle(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	status, header, body := d.serve(ctx, raw)
	res, outcome := d.result(status, header, body)
	d.calls.WithLabelValues(d.tool.spec.name, outcome).Inc()
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	d.logger.LogAttrs(ctx, level, "mcp tool call",
		slog.String("requestId", d.requestID(ctx)), slog.String("tool", d.tool.spec.name),
		slog.String("operation", d.tool.spec.op), slog.Int("status", status), slog.String("outcome", outcome),
		slog.Float64("ms", float64(time.Since(start).Microseconds())/1000))
	return res, nil
}

// serve builds the REST request for the arguments and serves it through the backend. A call
// that cannot be put as a REST request at all is refused here, with a problem in the REST
// API's vocabulary.
func (d *dispatcher) serve(ctx context.Context, raw json.RawMessage) (int, http.Header, []byte) {
	r, p := d.tool.request(ctx, raw)
	if p != nil {
		p.RequestID = d.requestID(ctx)
		b, _ := json.Marshal(p)
		h := http.Header{"Content-Type": {"application/problem+json"}}
		return p.Status, h, b
	}
	w := &recorder{header: http.Header{}}
	d.backend.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.status, w.header, w.body.Bytes()
}

// request turns a call's arguments into the REST request of the tool's operation: each
// parameter's argument into the path, the query or a header, every other argument into the
// JSON body, as sent (each argument's JSON text is kept byte for byte).
func (t *tool) request(ctx context.Context, raw json.RawMessage) (*http.Request, *problem) {
	args := map[string]json.RawMessage{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || json.Unmarshal(trimmed, &args) != nil {
			return nil, refusal(http.StatusBadRequest, "invalid-request", "(arguments)",
				"The tool's arguments must be a JSON object of the arguments its input schema names.")
		}
	}
	path := t.path
	query := url.Values{}
	header := http.Header{}
	for _, p := range t.params {
		v, present := args[p.arg]
		delete(args, p.arg)
		present = present && !isNull(v)
		if !present {
			if p.required {
				return nil, refusal(http.StatusBadRequest, "invalid-parameter", p.arg, "`"+p.arg+"` is required.")
			}
			continue
		}
		switch p.in {
		case "path":
			s := paramText(v)
			if s == "" {
				return nil, refusal(http.StatusBadRequest, "invalid-parameter", p.arg, "`"+p.arg+"` must not be empty.")
			}
			path = strings.Replace(path, "{"+p.name+"}", url.PathEscape(s), 1)
		case "query":
			var many []json.RawMessage
			if p.array && json.Unmarshal(v, &many) == nil {
				for _, one := range many {
					query.Add(p.name, paramText(one))
				}
				continue
			}
			query.Set(p.name, paramText(v))
		case "header":
			header.Set(p.name, paramText(v))
		}
	}
	var body []byte
	if t.hasBody {
		// Every remaining argument goes into the body, unknown ones included: the REST
		// validator refuses those with the problem it always sends (unknown-field, naming it).
		var b bytes.Buffer
		b.WriteByte('{')
		for i, name := range sortedKeys(args) {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(name)
			b.Write(k)
			b.WriteByte(':')
			b.Write(args[name])
		}
		b.WriteByte('}')
		body = b.Bytes()
	} else if len(args) > 0 {
		name := sortedKeys(args)[0]
		return nil, refusal(http.StatusBadRequest, "unknown-field", name,
			"`"+name+"` is not an argument of this tool; remove it or fix its name.")
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	r, err := http.NewRequestWithContext(ctx, t.method, target, bytes.NewReader(body))
	if err != nil {
		return nil, refusal(http.StatusBadRequest, "invalid-parameter", "(arguments)", "The arguments do not make a valid request.")
	}
	r.RequestURI = target
	r.RemoteAddr = "mcp"
	for k, vs := range header {
		r.Header[k] = vs
	}
	r.Header.Set("Accept", "application/json")
	if t.hasBody {
		r.Header.Set("Content-Type", "application/json")
	} else {
		r.Body, r.ContentLength = http.NoBody, 0
	}
	return r, nil
}

// result is the tool result of the REST answer, and its outcome for the metrics: the answer's
// JSON as structured content on success (with its text, or the tool's own text), the problem
// as the text of a tool error otherwise.
func (d *dispatcher) result(status int, header http.Header, body []byte) (*sdk.CallToolResult, string) {
	if successStatus(status) && isJSON(header.Get("Content-Type")) && json.Valid(body) {
		text := string(bytes.TrimSpace(body))
		if d.tool.spec.text != nil {
			text = d.tool.spec.text(body)
		}
		res := &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: text}},
			StructuredContent: json.RawMessage(bytes.TrimSpace(body)),
		}
		// What the REST answer says in its headers (a replayed turn, a Location), a tool
		// result says in its _meta.
		hdrs := map[string]string{}
		for _, name := range d.tool.headers[status] {
			if v := header.Get(name); v != "" {
				hdrs[name] = v
			}
		}
		if len(hdrs) > 0 {
			res.Meta = sdk.Meta{metaHeaders: hdrs}
		}
		return res, "ok"
	}
	var p struct {
		Code string `json:"code"`
	}
	text := bytes.TrimSpace(body)
	if !isJSON(header.Get("Content-Type")) || json.Unmarshal(text, &p) != nil || p.Code == "" {
		// Not a problem the REST layer wrote: never pass on what it is.
		text, _ = json.Marshal(refusal(http.StatusInternalServerError, "internal", "", ""))
		p.Code = "internal"
	}
	// The problem's JSON as the REST API sent it, members in its order. Retry-After is a
	// header in HTTP; a tool result has none, so its seconds travel as a last member.
	if s, err := strconv.Atoi(header.Get("Retry-After")); err == nil && s > 0 && text[len(text)-1] == '}' {
		text = append(text[:len(text)-1:len(text)-1], []byte(`,"retryAfter":`+strconv.Itoa(s)+`}`)...)
	}
	// No structured content: MCP clients check it against the tool's output schema, which
	// describes the success answer.
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}}, p.Code
}

// metaHeaders is the _meta member that holds a success's response headers.
const metaHeaders = "footprint/headers"

// problem is an RFC 9457 problem, its members in the REST API's order.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Detail    string `json:"detail,omitempty"`
	Path      string `json:"path,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

// refusal is a problem for a call that could not become a REST request, in the shape and
// words the REST API uses for the same mistake.
func refusal(status int, code, path, detail string) *problem {
	titles := map[string]string{
		"invalid-request":   "Invalid request",
		"invalid-parameter": "Invalid parameter",
		"unknown-field":     "Unknown field",
		"internal":          "Internal server error",
	}
	return &problem{Type: "/problems/" + code, Title: titles[code], Status: status, Code: code, Detail: detail, Path: path}
}

// paramText is a parameter's value as the text of a URL: a string's characters, any other
// JSON value's text (which the REST validator then judges against the parameter's schema).
func paramText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(v))
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// recorder keeps the backend's answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
