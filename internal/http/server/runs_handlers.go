package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/http/apitime"
	"github.com/footprint/footprint/internal/http/eventio"
	"github.com/footprint/footprint/internal/http/gen"
)

// Run recordings over HTTP. Handlers return domain errors (problemFor maps them); a tenant
// over its open-run limit is answered here as 429 rate-limited.
//
// Following a run live (GET /v1/runs/{runId}/events with Accept: text/event-stream) POLLS the
// store every ssePoll for events after the last one sent, so it follows appends taken by any
// server process sharing the database. Such a request is exempt from the /v1 deadline
// (server.go withDeadline) and ends when the run is finished and fully sent, when the client
// goes away, or when the server shuts down.

var (
	ssePoll      = 150 * time.Millisecond
	sseKeepAlive = 15 * time.Second
)

// ssePageSize is how many events one poll reads.
const ssePageSize = 500

type requestKey struct{}

// withRunsRequest is a strict-server middleware that lets ListRunEvents see its request (the
// Accept header decides between a page and a stream).
func withRunsRequest(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if operationID != "ListRunEvents" {
		return f
	}
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request, request any) (any, error) {
		return f(context.WithValue(ctx, requestKey{}, r), w, r, request)
	}
}

// isEventStream reports whether the request asks for Server-Sent Events.
func isEventStream(r *http.Request) bool {
	return r != nil && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

func (h *handlers) OpenRun(ctx context.Context, req gen.OpenRunRequestObject) (gen.OpenRunResponseObject, error) {
	b := req.Body
	p := runs.RunParams{
		ID: deref(b.RunID), ConversationID: deref(b.ConversationID), Principal: deref(b.Principal),
		Turn: deref(b.Turn), MaxEvents: b.MaxEvents, RecordEmbeddings: deref(b.RecordEmbeddings),
		StartedAt: deref(b.StartedAt).Time,
	}
	maxOpen := h.maxOpenRuns
	if maxOpen == 0 {
		maxOpen = runs.DefaultMaxOpenRuns
	}
	r, wasReplayed, err := h.svc.Runs.OpenRunWithKey(ctx, tenantFrom(ctx), p, maxOpen, deref(req.Params.IdempotencyKey))
	if err != nil {
		return nil, err
	}
	return gen.OpenRun201JSONResponse{Body: runOut(r), Headers: gen.OpenRun201ResponseHeaders{Location: "/v1/runs/" + r.ID,
		ETag: revisionTag(r.Revision()), IdempotentReplayed: replayedHeader(wasReplayed)}}, nil
}

func (h *handlers) ListRuns(ctx context.Context, req gen.ListRunsRequestObject) (gen.ListRunsResponseObject, error) {
	tenant := tenantFrom(ctx)
	p := req.Params
	limit := defaultPageSize
	if p.Limit != nil {
		limit = min(max(*p.Limit, 1), maxPageSize)
	}
	q := runs.RunQuery{Tenant: tenant, Limit: limit + 1}
	if c := deref(p.ConversationID); c != "" {
		q.Namespace = core.Identity{Tenant: tenant, Principal: deref(p.Principal), ConversationID: c}.Namespace()
	} else {
		q.Principal = deref(p.Principal)
	}
	query := "runs\x00" + q.Namespace + "\x00" + q.Principal
	if c := deref(p.Cursor); c != "" {
		after, err := h.cursors.open(c, tenant, query)
		micros, id, ok := strings.Cut(after, "/")
		n, perr := strconv.ParseInt(micros, 10, 64)
		if err != nil || !ok || perr != nil {
			pr := newProblem(http.StatusBadRequest, "invalid-cursor", "The cursor is not one this server issued for this query; start again without `cursor`.")
			pr.Path = "cursor"
			return nil, pr
		}
		q.AfterCreated, q.AfterID = time.UnixMicro(n).UTC(), id
	}
	runs, err := h.svc.Runs.ListRuns(ctx, q)
	if err != nil {
		return nil, err
	}
	body := gen.RunList{Runs: make([]gen.Run, 0, min(len(runs), limit))}
	for i, r := range runs {
		if i == limit {
			last := runs[limit-1]
			c := h.cursors.sign(tenant, query, strconv.FormatInt(last.CreatedAt.UnixMicro(), 10)+"/"+last.ID)
			body.NextCursor = &c
			break
		}
		body.Runs = append(body.Runs, runOut(r))
	}
	return gen.ListRuns200JSONResponse{Body: body}, nil
}

func (h *handlers) GetRun(ctx context.Context, req gen.GetRunRequestObject) (gen.GetRunResponseObject, error) {
	if req.Params.IfNoneMatch != nil {
		// The run's state decides its recording: a match needs no events read.
		r, err := h.svc.Runs.GetRun(ctx, tenantFrom(ctx), req.RunID)
		if err != nil {
			return nil, err
		}
		if tag := revisionTag(r.Revision()); matches(req.Params.IfNoneMatch, tag) {
			return gen.GetRun304Response{Headers: gen.NotModifiedResponseHeaders{ETag: tag}}, nil
		}
	}
	r, evs, err := h.svc.Runs.RunEvents(ctx, tenantFrom(ctx), req.RunID, -1, 0)
	if err != nil {
		return nil, err
	}
	body := gen.Recording{Format: gen.RecordingFormat(runs.RecordingFormat), Run: runOut(r), Events: make([]gen.RecordedEvent, len(evs))}
	for i, e := range evs {
		body.Events[i] = recordedEventOut(e)
	}
	return gen.GetRun200JSONResponse{Body: body, Headers: gen.GetRun200ResponseHeaders{ETag: revisionTag(r.Revision())}}, nil
}

func (h *handlers) AppendEvents(ctx context.Context, req gen.AppendEventsRequestObject) (gen.AppendEventsResponseObject, error) {
	var events []eventio.Event
	switch {
	case req.JSONBody != nil:
		events = req.JSONBody.Events // decoded and checked by eventio.Batch.UnmarshalJSON
	case req.Body != nil:
		raw, err := io.ReadAll(req.Body) // limitBody already buffered and bounded it
		if err != nil {
			return nil, newProblem(http.StatusBadRequest, "invalid-request", "The request body could not be read.")
		}
		if events, err = eventio.DecodeNDJSON(raw); err != nil {
			return nil, eventsProblem(err)
		}
	default:
		return nil, newProblem(http.StatusUnsupportedMediaType, "unsupported-media-type",
			"Send the events as JSON (`Content-Type: application/json`, {\"events\": [...]}) or as NDJSON (`Content-Type: application/x-ndjson`, one event per line).")
	}
	in := make([]runs.RunEventInput, len(events))
	for i, e := range events {
		in[i] = runs.RunEventInput{Type: e.Type, Payload: e.Payload, Meta: e.Meta}
	}
	res, err := h.svc.Runs.AppendEvents(ctx, tenantFrom(ctx), req.RunID, in)
	if err != nil {
		return nil, err
	}
	return gen.AppendEvents200JSONResponse{Body: gen.AppendResult{Count: res.Count, Dropped: res.Dropped,
		FirstRetainedIndex: res.FirstRetainedIndex, TruncatedEvents: res.TruncatedEvents}}, nil
}

func (h *handlers) FinishRun(ctx context.Context, req gen.FinishRunRequestObject) (gen.FinishRunResponseObject, error) {
	r, err := h.svc.Runs.FinishRun(ctx, tenantFrom(ctx), req.RunID, req.Body.Complete)
	if err != nil {
		var ce *core.ConflictError
		if errors.As(err, &ce) && ce.Code == core.CodeRunFinished {
			pr := newProblem(http.StatusConflict, ce.Code, ce.Detail)
			pr.Path = "complete"
			return nil, pr
		}
		return nil, err
	}
	return gen.FinishRun200JSONResponse{Body: runOut(r), Headers: gen.FinishRun200ResponseHeaders{ETag: revisionTag(r.Revision())}}, nil
}

func (h *handlers) ListRunEvents(ctx context.Context, req gen.ListRunEventsRequestObject) (gen.ListRunEventsResponseObject, error) {
	tenant := tenantFrom(ctx)
	p := req.Params
	after, resumed := int64(-1), false
	if p.After != nil {
		after, resumed = max(*p.After, -1), true
	}
	r, _ := ctx.Value(requestKey{}).(*http.Request)
	if isEventStream(r) {
		if p.LastEventID != nil {
			n, err := strconv.ParseInt(*p.LastEventID, 10, 64)
			if err != nil {
				pr := newProblem(http.StatusBadRequest, "invalid-parameter", "Last-Event-ID must be an event's stream index.")
				pr.Path = "Last-Event-ID"
				return nil, pr
			}
			after, resumed = max(n, -1), true
		}
		run, evs, err := h.svc.Runs.RunEvents(ctx, tenant, req.RunID, after, ssePageSize)
		if err != nil {
			return nil, err
		}
		return &sseStream{h: h, ctx: ctx, tenant: tenant, runID: req.RunID, after: after, resumed: resumed, run: run, evs: evs}, nil
	}
	limit := defaultPageSize
	if p.Limit != nil {
		limit = min(max(*p.Limit, 1), maxPageSize)
	}
	run, evs, err := h.svc.Runs.RunEvents(ctx, tenant, req.RunID, after, limit+1)
	if err != nil {
		return nil, err
	}
	body := gen.RunEventPage{Events: make([]gen.RecordedEvent, 0, min(len(evs), limit))}
	if g := gapOf(after, resumed, run); g != nil {
		body.Gap = g
	}
	for i, e := range evs {
		if i == limit {
			next := evs[limit-1].Index
			body.NextAfter = &next
			break
		}
		body.Events = append(body.Events, recordedEventOut(e))
	}
	return gen.ListRunEvents200JSONResponse{Body: body}, nil
}

// gapOf reports the indexes lost between a resume point and the first retained event.
func gapOf(after int64, resumed bool, r runs.Run) *gen.EventGap {
	if !resumed || after+1 >= r.Dropped {
		return nil
	}
	return &gen.EventGap{From: after + 1, To: r.Dropped - 1}
}

// sseStream follows a run as Server-Sent Events.
type sseStream struct {
	h       *handlers
	ctx     context.Context
	tenant  string
	runID   string
	after   int64
	resumed bool
	run     runs.Run
	evs     []runs.RunEvent
}

func (s *sseStream) VisitListRunEventsResponse(w http.ResponseWriter) error {
	s.h.followers.Inc()
	defer s.h.followers.Dec()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()

	last := s.after
	if !s.resumed && last+1 < s.run.Dropped {
		last = s.run.Dropped - 1 // no resume point: start at the first retained event, no gap
	}
	poll := time.NewTicker(ssePoll)
	defer poll.Stop()
	quietSince := time.Now()
	run, evs := s.run, s.evs
	var buf []byte
	for {
		buf = buf[:0]
		if last+1 < run.Dropped {
			buf = fmt.Appendf(buf, "event: gap\ndata: {\"from\":%d,\"to\":%d}\n\n", last+1, run.Dropped-1)
			last = run.Dropped - 1
		}
		for _, e := range evs {
			if e.Index <= last {
				continue
			}
			data, err := json.Marshal(recordedEventOut(e))
			if err != nil {
				return err
			}
			buf = fmt.Appendf(buf, "id: %d\nevent: %s\ndata: ", e.Index, e.Type)
			buf = append(buf, data...)
			buf = append(buf, '\n', '\n')
			last = e.Index
		}
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				return nil // the client went away
			}
			_ = rc.Flush()
			quietSince = time.Now()
		}
		if run.Finished && last+1 >= run.NextIndex {
			return nil
		}
		if len(evs) < ssePageSize {
			select {
			case <-s.ctx.Done():
				return nil
			case <-poll.C:
			}
			if time.Since(quietSince) >= sseKeepAlive {
				if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
					return nil
				}
				_ = rc.Flush()
				quietSince = time.Now()
			}
		}
		var err error
		run, evs, err = s.h.svc.Runs.RunEvents(s.ctx, s.tenant, s.runID, last, ssePageSize)
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, core.ErrNotFound) {
				return nil // deleted under us: the stream ends
			}
			s.h.logger.WarnContext(s.ctx, "run event stream: read failed", "run", s.runID, "error", err.Error())
			return nil // the client reconnects with Last-Event-ID
		}
	}
}

func runOut(r runs.Run) gen.Run {
	out := gen.Run{
		RunID: r.ID, Complete: r.Complete, Finished: r.Finished, DroppedEvents: r.Dropped,
		FirstRetainedEventIndex: r.Dropped, EventCount: r.EventCount(), TruncatedEvents: r.TruncatedEvents,
		MaxEvents: r.MaxEvents,
	}
	if r.ConversationID != "" {
		out.ConversationID = &r.ConversationID
	}
	if r.Principal != "" {
		out.Principal = &r.Principal
	}
	if r.Turn != 0 {
		out.Turn = &r.Turn
	}
	// The server's clock; then the agent's, as it reported it.
	out.StartedAt, out.LastEventAt = apitime.Of(r.CreatedAt), apitime.Opt(r.LastReceivedAt)
	out.FinishedAt, out.EndedAt = apitime.Opt(r.FinishedAt), apitime.Opt(r.EndedAt())
	if start, last := r.KnownStart(), r.LastWallClock; !start.IsZero() || !last.IsZero() {
		out.ClientClock = &gen.ClientClock{StartedAt: apitime.Opt(start), LastEventAt: apitime.Opt(last)}
	}
	out.ClocksDisagree = r.ClocksDisagree()
	return out
}

var repeatTrue = true

func recordedEventOut(e runs.RunEvent) gen.RecordedEvent {
	out := gen.RecordedEvent{Index: e.Index, Type: e.Type, Payload: json.RawMessage(e.Payload)}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage("null")
	}
	if len(e.Meta) > 0 {
		var m map[string]any
		if json.Unmarshal(e.Meta, &m) == nil && m != nil {
			out.Meta = m
		}
	}
	out.ReceivedAt = apitime.Opt(e.ReceivedAt())
	if !e.Slot {
		out.Repeat = &repeatTrue
	}
	if e.Truncated != nil {
		out.Truncated = &gen.EventTruncation{OriginalBytes: e.Truncated.OriginalBytes, Sha256: e.Truncated.SHA256}
	}
	return out
}
