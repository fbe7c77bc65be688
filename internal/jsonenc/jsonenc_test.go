package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

type inner struct {
	A string            `json:"a,omitempty"`
	B []int             `json:"b"`
	M map[string]any    `json:"m,omitempty"`
	R json.RawMessage   `json:"r,omitempty"`
	P *float64          `json:"p,omitempty"`
	Z int               `json:"z,omitempty"`
	F bool              `json:"f,omitempty"`
	T time.Time         `json:"t"`
	S map[string]string `json:"s"`
}

type outer struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
	Items []inner `json:"items"`
	Any   any     `json:"any"`
}

// TestSameBytesAsEncodingJSON: the encoding is encoding/json's, byte for byte, for the shapes
// recall answers and receipts are made of.
func TestSameBytesAsEncodingJSON(t *testing.T) {
	half := 0.5
	cases := []any{
		outer{ID: "x", Score: 0.41874623782955256, Items: []inner{{A: "<source id=\"a\">&amp; </source>\u2028", B: nil,
			M: map[string]any{"z": 1, "a": []any{"x", nil, 2.5}}, R: json.RawMessage(`{"k": [1, 2]}`), P: &half,
			T: time.Date(2026, 11, 30, 16, 32, 8, 569000000, time.UTC)}}, Any: map[string]int{"b": 2, "a": 1}},
		outer{},
		[]string{"invalid \xff utf-8", "tab\tnewline\n", "emoji 😀"},
		map[string]any{"n": nil, "f": 1e21, "g": 1e-7, "i": int64(math.MaxInt64)},
		"plain",
		nil,
	}
	for i, v := range cases {
		want, werr := json.Marshal(v)
		got, gerr := Marshal(v, false)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("case %d: errors differ: encoding/json %v, jsonenc %v", i, werr, gerr)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got.Bytes(), want)
		}
		got.Release()
		nl, _ := Marshal(v, true)
		if !bytes.Equal(nl.Bytes(), append(want, '\n')) {
			t.Errorf("case %d with newline: got %q", i, nl.Bytes())
		}
		nl.Release()
	}
}

func TestUnencodableValues(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"c": make(chan int)}} {
		if _, err := json.Marshal(v); err == nil {
			t.Fatalf("encoding/json encoded %v", v)
		}
		if b, err := Marshal(v, false); err == nil {
			t.Errorf("jsonenc encoded %v as %s", v, b.Bytes())
		}
	}
}

// TestReleasedBufferIsReused: a released buffer serves the next value, and its old bytes do
// not leak into it.
func TestReleasedBufferIsReused(t *testing.T) {
	a, _ := Marshal("a long first value that fills the buffer", false)
	a.Release()
	b, _ := Marshal(1, false)
	defer b.Release()
	if string(b.Bytes()) != "1" {
		t.Fatalf("got %q", b.Bytes())
	}
}
