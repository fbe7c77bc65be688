package recall_test

import (
	"encoding/json"
	"testing"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

// legacyShape rewrites a receipt as receipts were stored before spans: each
// memory's text in `messages`, each admitted candidate's in
// `promptFragment`, each injection's in `systemPrompt`.
func legacyShape(t *testing.T, res recall.RecallResult) []byte {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	text := func(v any) string {
		s := v.(map[string]any)
		return res.SystemPrompt[int(s["start"].(float64)):int(s["end"].(float64))]
	}
	var evidence func(ev map[string]any)
	evidence = func(ev map[string]any) {
		cs, _ := ev["candidates"].([]any)
		for _, c := range cs {
			c := c.(map[string]any)
			if sp, ok := c["systemSpan"]; ok {
				c["promptFragment"] = text(sp)
				delete(c, "systemSpan")
			}
		}
		ps, _ := ev["parts"].([]any)
		for _, p := range ps {
			evidence(p.(map[string]any))
		}
	}
	for _, mr := range m["memories"].([]any) {
		mr := mr.(map[string]any)
		msgs := []any{}
		if sp, ok := mr["systemSpan"]; ok {
			msgs = append(msgs, map[string]any{"role": "system", "content": text(sp)})
			delete(mr, "systemSpan")
		}
		mr["messages"] = msgs
		evidence(mr["evidence"].(map[string]any))
	}
	for _, inj := range m["injections"].([]any) {
		inj := inj.(map[string]any)
		if sp, ok := inj["systemSpan"]; ok {
			inj["systemPrompt"] = text(sp)
			delete(inj, "systemSpan")
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLegacyReceiptsReadBack: a receipt stored before spans reads back as
// the receipt the same recall makes now: the same text, injections, spans.
func TestLegacyReceiptsReadBack(t *testing.T) {
	t.Parallel()
	chat := recall.ReadMemory(recall.ReadInput{
		Memory:  chatMemory(t, `{"kind":"hybrid","strategies":[{"kind":"window","size":1},{"kind":"window","size":3}]}`),
		Entries: []core.Entry{msg(t, 1, 0, "user", "héllo → there"), msg(t, 1, 1, "assistant", "hi"), msg(t, 2, 0, "user", "bye")},
		Now:     now,
	})
	quiet := recall.ReadMemory(recall.ReadInput{Memory: chatMemory(t, `{"kind":"window","size":3}`), Now: now})
	quiet.MemoryID = "quiet"
	res := assembled(quiet, chat)
	res.RecallID, res.QueryHash, res.CreatedAt = "rcl_legacy0001", "sha256:00", now
	want, _ := json.Marshal(res)
	old := legacyShape(t, res)
	if string(old) == string(want) {
		t.Fatal("the legacy shape is the current one")
	}
	var got recall.RecallResult
	if err := json.Unmarshal(old, &got); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(got); string(b) != string(want) {
		t.Errorf("legacy receipt reads back as\n%s\nwant\n%s", b, want)
	}
	// And a receipt of the current shape reads back as it is.
	var again recall.RecallResult
	if err := json.Unmarshal(want, &again); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(again); string(b) != string(want) {
		t.Errorf("current receipt reads back as\n%s\nwant\n%s", b, want)
	}
}
