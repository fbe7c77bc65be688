package recall_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

func TestInjectionsGuard(t *testing.T) {
	t.Parallel()
	base := recall.ReadMemory(recall.ReadInput{
		Memory:  chatMemory(t, `{"kind":"window","size":3}`),
		Entries: []core.Entry{msg(t, 1, 0, "user", "hello"), msg(t, 1, 1, "assistant", "hi there"), msg(t, 2, 0, "user", "bye")},
		Now:     now,
	})
	modified := base
	modified.Messages = []core.Message{{Role: "system", Content: base.Messages[0].Content + " (edited)"}}
	// The same bytes in another order: every fragment is in the text, but not where the
	// prompt order puts it.
	frags := strings.Split(base.Messages[0].Content, "\n\n")
	reordered := base
	reordered.Messages = []core.Message{{Role: "system", Content: strings.Join([]string{frags[1], frags[0], frags[2]}, "\n\n")}}
	withUser := base
	withUser.Messages = append([]core.Message{}, base.Messages...)
	withUser.Messages = append(withUser.Messages, core.Message{Role: "user", Content: "aside"})
	empty := recall.MemoryRecall{MemoryID: "none", Flavor: "memory"}

	tests := []struct {
		name   string
		recall recall.MemoryRecall
		ids    []string
		whole  bool // injected whole: no candidate points into the prompt
	}{
		{"per chunk when the fragments rebuild the content", base, []string{"memory:chat#msg-1-0", "memory:chat#msg-1-1", "memory:chat#msg-2-0"}, false},
		{"one injection when they do not", modified, []string{"memory:chat"}, true},
		{"one injection when they are there in another order", reordered, []string{"memory:chat"}, true},
		{"non-system messages ride on their own injection", withUser, []string{"memory:chat#msg-1-0", "memory:chat#msg-1-1", "memory:chat#msg-2-0", "memory:chat"}, false},
		{"nothing to inject", empty, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := assembled(tt.recall)
			var got, prompts []string
			for _, inj := range res.Injections {
				got = append(got, inj.ID)
				if text, ok := res.Text(inj.SystemSpan); ok {
					prompts = append(prompts, text)
				} else if inj.SystemSpan != nil {
					t.Errorf("%s: span %+v outside the prompt", inj.ID, inj.SystemSpan)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.ids, ",") {
				t.Fatalf("ids %q, want %q", got, tt.ids)
			}
			// Splitting never changes the prompt: the injections' spans tile it.
			system := ""
			for _, m := range tt.recall.Messages {
				if m.Role == "system" {
					system = m.Content
				}
			}
			if res.SystemPrompt != system || strings.Join(prompts, "\n\n") != system {
				t.Errorf("injected %q, prompt %q, want %q", prompts, res.SystemPrompt, system)
			}
			mr := res.Memories[0]
			if mr.Messages != nil {
				t.Errorf("messages left after assembly: %+v", mr.Messages)
			}
			for _, c := range mr.Evidence.Candidates {
				if c.PromptFragment != nil {
					t.Errorf("%s: fragment left after assembly", c.ID)
				}
				if c.Admitted && (c.SystemSpan == nil) != tt.whole {
					t.Errorf("%s: span %+v, injected whole %v", c.ID, c.SystemSpan, tt.whole)
				}
				if c.SystemSpan != nil {
					text, _ := res.Text(c.SystemSpan)
					if want := injected(res, res.Injections[*c.PromptPosition]); text != want {
						t.Errorf("%s: candidate's text %q, its injection's %q", c.ID, text, want)
					}
				}
			}
			if tt.whole {
				inj := res.Injections[0]
				if injected(res, inj) != system || inj.Description != "recall from memory 'chat'" || inj.Flavor != "memory" || inj.Retrieval != nil {
					t.Errorf("fallback injection %+v", inj)
				}
				if !strings.Contains(mr.Evidence.Note, "do not rebuild") {
					t.Errorf("the evidence does not say the memory was injected whole: %q", mr.Evidence.Note)
				}
			}
			if tt.name == "non-system messages ride on their own injection" {
				last := res.Injections[len(res.Injections)-1]
				if last.SystemSpan != nil || len(last.Messages) != 1 || last.Messages[0].Content != "aside" {
					t.Errorf("message injection %+v", last)
				}
			}
		})
	}
}

func TestSystemPromptJoinsMemoriesInOrder(t *testing.T) {
	t.Parallel()
	a := recall.MemoryRecall{MemoryID: "a", Messages: []core.Message{{Role: "system", Content: "A1"}, {Role: "user", Content: "u"}, {Role: "system", Content: "A2"}}}
	b := recall.MemoryRecall{MemoryID: "b"}
	c := recall.MemoryRecall{MemoryID: "c", Messages: []core.Message{{Role: "system", Content: "Cé→"}}}
	res := assembled(a, b, c)
	if res.SystemPrompt != "A1\n\nA2\n\nCé→" {
		t.Errorf("got %q", res.SystemPrompt)
	}
	// Spans are byte offsets: c's text starts after "A1\n\nA2\n\n" and is 6 bytes long.
	if s := res.Memories[2].SystemSpan; s == nil || *s != (recall.Span{Start: 8, End: 14}) {
		t.Errorf("c's span %+v", s)
	}
	if res.Memories[1].SystemSpan != nil {
		t.Errorf("b recalled nothing, yet has span %+v", res.Memories[1].SystemSpan)
	}
}

// TestAnswerCarriesTextOnce: a recall's text is in its JSON once, in
// systemPrompt, however many memories, candidates, hybrid parts and
// injections point to it.
func TestAnswerCarriesTextOnce(t *testing.T) {
	t.Parallel()
	chat := recall.ReadMemory(recall.ReadInput{
		Memory:  chatMemory(t, `{"kind":"hybrid","strategies":[{"kind":"window","size":1},{"kind":"window","size":3}]}`),
		Entries: []core.Entry{msg(t, 1, 0, "user", "zebra-unique-one"), msg(t, 1, 1, "assistant", "zebra-unique-two"), msg(t, 2, 0, "user", "zebra-unique-three")},
		Now:     now,
	})
	res := assembled(chat)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"zebra-unique-one", "zebra-unique-two", "zebra-unique-three"} {
		if n := strings.Count(string(b), word); n != 1 {
			t.Errorf("%q is %d times in the answer, want once:\n%s", word, n, b)
		}
	}
	if len(res.Injections) != 3 {
		t.Fatalf("injections %+v", res.Injections)
	}
	for _, p := range res.Memories[0].Evidence.Parts {
		for _, c := range p.Candidates {
			if c.Admitted && c.SystemSpan == nil {
				t.Errorf("part %s: admitted %s has no span", p.Strategy, c.ID)
			}
		}
	}
}
