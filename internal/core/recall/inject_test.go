package recall_test

import (
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
	withUser := base
	withUser.Messages = append([]core.Message{}, base.Messages...)
	withUser.Messages = append(withUser.Messages, core.Message{Role: "user", Content: "aside"})
	empty := recall.MemoryRecall{MemoryID: "none", Flavor: "memory"}

	tests := []struct {
		name   string
		recall recall.MemoryRecall
		ids    []string
	}{
		{"per chunk when the fragments rebuild the content", base, []string{"memory:chat#msg-1-0", "memory:chat#msg-1-1", "memory:chat#msg-2-0"}},
		{"one injection when they do not", modified, []string{"memory:chat"}},
		{"non-system messages ride on their own injection", withUser, []string{"memory:chat#msg-1-0", "memory:chat#msg-1-1", "memory:chat#msg-2-0", "memory:chat"}},
		{"nothing to inject", empty, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			injs := recall.Injections([]recall.MemoryRecall{tt.recall})
			var got []string
			var prompts []string
			for _, inj := range injs {
				got = append(got, inj.ID)
				if inj.SystemPrompt != "" {
					prompts = append(prompts, inj.SystemPrompt)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.ids, ",") {
				t.Fatalf("ids %q, want %q", got, tt.ids)
			}
			// Splitting never changes the prompt.
			if want := recall.SystemPrompt([]recall.MemoryRecall{tt.recall}); strings.Join(prompts, "\n\n") != want {
				t.Errorf("injected system prompt differs from SystemPrompt")
			}
			if tt.name == "one injection when they do not" {
				inj := injs[0]
				if inj.SystemPrompt != modified.Messages[0].Content || inj.Description != "recall from memory 'chat'" || inj.Flavor != "memory" || inj.Retrieval != nil {
					t.Errorf("fallback injection %+v", inj)
				}
			}
			if tt.name == "non-system messages ride on their own injection" {
				last := injs[len(injs)-1]
				if last.SystemPrompt != "" || len(last.Messages) != 1 || last.Messages[0].Content != "aside" {
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
	c := recall.MemoryRecall{MemoryID: "c", Messages: []core.Message{{Role: "system", Content: "C"}}}
	if got := recall.SystemPrompt([]recall.MemoryRecall{a, b, c}); got != "A1\n\nA2\n\nC" {
		t.Errorf("got %q", got)
	}
}
