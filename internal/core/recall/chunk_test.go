package recall_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/footprint/footprint/internal/core/recall"
)

func TestChunkText(t *testing.T) {
	t.Parallel()
	para := func(words int) string { return strings.TrimSpace(strings.Repeat("lorem ", words)) }
	tests := []struct {
		name string
		text string
		max  int
		want []string
	}{
		{"empty", "  \n\n ", 100, nil},
		{"one short paragraph", "Hello world.", 100, []string{"Hello world."}},
		{"paragraphs packed", "a b\n\nc d\n\ne f", 8, []string{"a b\n\nc d", "e f"}},
		{"long paragraph split at words", para(30), 60, []string{para(10), para(10), para(9) + " lorem"}},
		{"overlong word cut", strings.Repeat("x", 25), 10, []string{strings.Repeat("x", 10), strings.Repeat("x", 10), strings.Repeat("x", 5)}},
		{"crlf", "a\r\n\r\nb", 1, []string{"a", "b"}},
	}
	for _, tc := range tests {
		got := recall.ChunkText(tc.text, tc.max)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		for _, c := range got {
			if utf8.RuneCountInString(c) > tc.max {
				t.Errorf("%s: chunk of %d runes exceeds %d", tc.name, utf8.RuneCountInString(c), tc.max)
			}
		}
	}
}
