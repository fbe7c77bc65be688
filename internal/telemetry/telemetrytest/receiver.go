// Package telemetrytest is an in-process OTLP/HTTP trace receiver, for tests
// and benchmarks that export spans with the real exporter and want to see
// what arrived without running a collector.
package telemetrytest

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver accepts OTLP/HTTP protobuf exports on POST /v1/traces, on a
// loopback listener of its own. Safe for concurrent use.
type Receiver struct {
	// URL is the receiver's root, for OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	keep     bool
	srv      *http.Server
	requests atomic.Int64
	bytes    atomic.Int64
	mu       sync.Mutex
	spans    []Span
}

// Span is one received span with the resource it came from.
type Span struct {
	*tracepb.Span
	Service string // the resource's service.name
}

// Attr returns the span's string, int, double or bool attribute key as a
// string ("" when absent).
func (s Span) Attr(key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return valueString(kv.Value)
		}
	}
	return ""
}

// Start listens on 127.0.0.1. With keep, every request is decoded and its
// spans kept (Spans); without, requests are read and discarded, as cheaply
// as a receiver can be (for benchmarks: what the service pays is the
// export, not the receiver's decoding).
func Start(keep bool) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String(), keep: keep}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	r.requests.Add(1)
	r.bytes.Add(int64(len(body)))
	if r.keep {
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, "not an ExportTraceServiceRequest", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					r.spans = append(r.spans, Span{Span: sp, Service: service})
				}
			}
		}
		r.mu.Unlock()
	}
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far (with keep).
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Received returns how many export requests and bytes arrived.
func (r *Receiver) Received() (requests, bytes int64) { return r.requests.Load(), r.bytes.Load() }

// Close stops the receiver.
func (r *Receiver) Close() { _ = r.srv.Close() }

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}
