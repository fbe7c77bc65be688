package turns

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/footprint/footprint/internal/core"
)

// factPattern is one deterministic extraction rule. The patterns are
// documented in the README; they are English-only heuristics, free and
// predictable, not understanding.
type factPattern struct {
	re         *regexp.Regexp
	key        func(m []string) string
	value      func(m []string) string
	confidence float64
}

const valueTail = `([^!?\n]{1,120})`

var factPatterns = []factPattern{
	{re: regexp.MustCompile(`(?i)\bmy name is ` + valueTail), key: fixed("name"), value: group(1), confidence: 0.95},
	{re: regexp.MustCompile(`(?i)\b(?:please )?call me ` + valueTail), key: fixed("name"), value: group(1), confidence: 0.85},
	{re: regexp.MustCompile(`(?i)\bmy (?:e-?mail|email address) is ` + valueTail), key: fixed("email"), value: group(1), confidence: 0.95},
	{re: regexp.MustCompile(`(?i)\bi (?:live in|am from|'m from|am based in|'m based in) ` + valueTail), key: fixed("location"), value: group(1), confidence: 0.85},
	{re: regexp.MustCompile(`(?i)\bi (?:work as|am a|'m a|am an|'m an) ` + valueTail), key: fixed("occupation"), value: group(1), confidence: 0.6},
	{re: regexp.MustCompile(`(?i)\bi work (?:at|for) ` + valueTail), key: fixed("employer"), value: group(1), confidence: 0.85},
	{re: regexp.MustCompile(`(?i)\bmy (?:favou?rite) ([a-z][a-z ]{0,30}?) is ` + valueTail), key: prefixed("favorite", 1), value: group(2), confidence: 0.85},
	{re: regexp.MustCompile(`(?i)\bi (?:prefer|like|love|enjoy) ` + valueTail), key: prefixed("likes", 1), value: group(1), confidence: 0.7},
	{re: regexp.MustCompile(`(?i)\bi (?:don't|do not|never) (?:like|want|enjoy) ` + valueTail), key: prefixed("dislikes", 1), value: group(1), confidence: 0.7},
	{re: regexp.MustCompile(`(?i)\bi (?:hate|dislike) ` + valueTail), key: prefixed("dislikes", 1), value: group(1), confidence: 0.7},
	{re: regexp.MustCompile(`(?i)\bremember (?:that )?` + valueTail), key: prefixed("note", 1), value: group(1), confidence: 0.9},
	{re: regexp.MustCompile(`(?i)\bmy ([a-z][a-z ]{0,30}?) is ` + valueTail), key: prefixed("", 1), value: group(2), confidence: 0.6},
}

func fixed(k string) func([]string) string { return func([]string) string { return k } }

func group(i int) func([]string) string {
	return func(m []string) string { return strings.TrimRight(strings.TrimSpace(m[i]), ".") }
}

func prefixed(prefix string, i int) func([]string) string {
	return func(m []string) string {
		s := slug(m[i])
		if prefix == "" {
			return s
		}
		return prefix + ":" + s
	}
}

// slug makes a short, stable key part: lower-case letters and digits
// joined by '-', at most 48 bytes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 48 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

var sentenceEnd = regexp.MustCompile(`[.!?\n]+`)

// clauseBreak splits a sentence into the clauses facts are matched in, so
// "my name is Ada and I live in Paris" yields both facts.
var clauseBreak = regexp.MustCompile(`(?i)[!?\n;]+|\.(?:\s+|$)|,\s+|\s+(?:and|but|so)\s+`)

// ExtractFacts applies the pattern rules to the user's messages of a turn,
// first match per clause, dropping facts below minConfidence and keeping
// at most maxPerTurn (later restatements of a key within the turn win).
func ExtractFacts(messages []core.Message, minConfidence float64, maxPerTurn int) []core.Fact {
	var out []core.Fact
	index := map[string]int{}
	for _, m := range messages {
		if m.Role != "user" {
			continue
		}
		for _, sentence := range clauseBreak.Split(m.Content, -1) {
			sentence = strings.TrimSpace(sentence)
			for _, p := range factPatterns {
				match := p.re.FindStringSubmatch(sentence)
				if match == nil {
					continue
				}
				f := core.Fact{Key: p.key(match), Value: strings.TrimSpace(p.value(match)), Text: core.Truncate(sentence, 300), Confidence: p.confidence}
				if f.Key == "" || f.Value == "" || strings.HasSuffix(f.Key, ":") || f.Confidence < minConfidence {
					break
				}
				if i, seen := index[f.Key]; seen {
					out[i] = f
				} else if len(out) < maxPerTurn {
					index[f.Key] = len(out)
					out = append(out, f)
				}
				break
			}
		}
	}
	return out
}

// ExtractBeats takes the first sentence of each user and assistant message
// as that message's beat: what was asked, what was answered.
func ExtractBeats(messages []core.Message, minConfidence float64, maxPerTurn int) []core.Beat {
	const confidence = 0.5
	if confidence < minConfidence {
		return nil
	}
	var out []core.Beat
	for _, m := range messages {
		if (m.Role != "user" && m.Role != "assistant") || len(out) >= maxPerTurn {
			continue
		}
		first := strings.TrimSpace(sentenceEnd.Split(strings.TrimSpace(m.Content), 2)[0])
		if first == "" {
			continue
		}
		out = append(out, core.Beat{Role: m.Role, Text: core.Truncate(first, 300), Confidence: confidence})
	}
	return out
}
