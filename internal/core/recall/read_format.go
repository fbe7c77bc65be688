package recall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/footprint/footprint/internal/core"
)

// Causal projections: how a past turn's snapshot is written into the prompt.
const (
	ProjectionDecisions = "decisions" // decisions, tool calls, the answer (default)
	ProjectionNarrative = "narrative" // the same, as prose
	ProjectionCommits   = "commits"   // decisions only
	ProjectionFull      = "full"      // everything, with iterations, duration and token usage
)

// maxPastQueryChars is how much of a past turn's query heads its block.
const maxPastQueryChars = 80

// header is the line put before the first fragment of a recall, chosen by
// the kind of entry that fragment renders.
func (r reader) header(e core.Entry) string {
	switch e.Kind {
	case core.KindDocument:
		return "Retrieved sources:"
	case core.KindSnapshot:
		return "Evidence from past turns of this conversation:"
	case core.KindFact:
		return fmt.Sprintf("Facts remembered from this conversation (memory %q):", r.m.ID)
	case core.KindBeat:
		return fmt.Sprintf("The story of this conversation so far (memory %q):", r.m.ID)
	}
	return fmt.Sprintf("Memory from earlier in this conversation (memory %q):", r.m.ID)
}

// block renders one entry. Stored text goes in verbatim except that a
// closing tag of the block's own element is defused, and attribute values
// are escaped, so stored text can never end its block early or forge
// attributes.
func (r reader) block(c *choice) string {
	e := c.e
	switch e.Kind {
	case core.KindMessage, core.KindSummary:
		var m core.Message
		if core.DecodeValue(e.Value, &m) != nil {
			m.Content = string(e.Value)
		}
		a := attrs{}
		if e.Kind == core.KindSummary {
			a.add("kind", "summary")
		}
		a.add("role", m.Role)
		a.turn(e.Turn)
		a.time("updated", e.UpdatedAt)
		a.score(c.score)
		return element("memory", a, m.Content)
	case core.KindFact:
		var f core.Fact
		if core.DecodeValue(e.Value, &f) != nil {
			f.Value = string(e.Value)
		}
		a := attrs{}
		a.add("kind", "fact")
		a.add("key", f.Key)
		a.time("updated", e.UpdatedAt)
		a.score(c.score)
		return element("memory", a, f.Value)
	case core.KindBeat:
		var b core.Beat
		if core.DecodeValue(e.Value, &b) != nil {
			b.Text = string(e.Value)
		}
		a := attrs{}
		a.add("kind", "beat")
		a.add("role", b.Role)
		a.turn(e.Turn)
		a.time("updated", e.UpdatedAt)
		a.score(c.score)
		return element("memory", a, b.Text)
	case core.KindDocument:
		d := c.document()
		a := attrs{}
		a.add("id", e.ID)
		a.add("doc", d.DocURI)
		if d.Page != nil && *d.Page != 0 {
			a.add("page", strconv.Itoa(*d.Page))
		}
		a.add("heading", d.Heading)
		a.score(c.score)
		return element("source", a, d.Text)
	case core.KindSnapshot:
		var s core.Snapshot
		if core.DecodeValue(e.Value, &s) != nil {
			s.FinalContent = string(e.Value)
		}
		return pastTurn(s, e.Turn, c.score, r.m.Projection)
	}
	a := attrs{}
	a.add("kind", string(e.Kind))
	a.add("id", e.ID)
	a.time("updated", e.UpdatedAt)
	a.score(c.score)
	return element("memory", a, string(e.Value))
}

// attrs builds an escaped attribute list; empty values are left out.
type attrs struct{ b strings.Builder }

func (a *attrs) add(name, value string) {
	if value == "" {
		return
	}
	a.b.WriteString(" ")
	a.b.WriteString(name)
	a.b.WriteString(`="`)
	a.b.WriteString(escapeAttr(value))
	a.b.WriteString(`"`)
}

func (a *attrs) turn(t int) {
	if t > 0 {
		a.add("turn", strconv.Itoa(t))
	}
}

func (a *attrs) time(name string, t time.Time) {
	if !t.IsZero() {
		a.add(name, t.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
}

func (a *attrs) score(s *float64) {
	if s != nil {
		a.add("score", formatScore(*s))
	}
}

// formatScore writes a score with two decimals, as every text does.
func formatScore(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) }

var attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

func escapeAttr(s string) string { return attrEscaper.Replace(s) }

func element(name string, a attrs, content string) string {
	return "<" + name + a.b.String() + ">" + defuseClosing(content, name) + "</" + name + ">"
}

// defuseClosing rewrites every closing tag of element name in text (any
// letter case, e.g. "</Source") to "<\/name", so the text cannot close the
// block it is wrapped in.
func defuseClosing(text, name string) string {
	if !strings.Contains(text, "</") {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], "</")
		if j < 0 {
			b.WriteString(text[i:])
			break
		}
		j += i
		b.WriteString(text[i:j])
		rest := text[j+2:]
		if len(rest) >= len(name) && strings.EqualFold(rest[:len(name)], name) {
			b.WriteString(`<\/`)
		} else {
			b.WriteString("</")
		}
		i = j + 2
	}
	return b.String()
}

// pastTurn renders one causal snapshot under its projection.
func pastTurn(s core.Snapshot, turn int, score *float64, projection string) string {
	var b strings.Builder
	b.WriteString("Past decision (")
	var head []string
	if turn > 0 {
		head = append(head, fmt.Sprintf("turn %d", turn))
	}
	if score != nil {
		head = append(head, "score "+formatScore(*score))
	}
	if len(head) == 0 {
		head = append(head, "earlier turn")
	}
	b.WriteString(strings.Join(head, ", "))
	b.WriteString("): ")
	b.WriteString(`"` + cutQuery(s.Query) + `"`)

	var lines []string
	switch projection {
	case ProjectionNarrative:
		lines = append(lines, narrate(s))
	case ProjectionCommits:
		lines = append(lines, decisionLines(s.Decisions)...)
		if len(lines) == 0 {
			if s.Reported(core.EvidenceDecisions) {
				lines = append(lines, "(no decisions recorded)")
			} else {
				lines = append(lines, "(decisions not reported)")
			}
		}
	case ProjectionFull:
		lines = append(lines, decisionLines(s.Decisions)...)
		lines = append(lines, toolLines(s.ToolCalls)...)
		lines = append(lines, costLine(s))
		if s.FinalContent != "" {
			lines = append(lines, "Answer: "+s.FinalContent)
		}
	default: // decisions
		lines = append(lines, decisionLines(s.Decisions)...)
		lines = append(lines, toolLines(s.ToolCalls)...)
		if s.FinalContent != "" {
			lines = append(lines, "Answer: "+s.FinalContent)
		}
	}
	for _, l := range lines {
		b.WriteString("\n")
		b.WriteString(indentBreaks(l))
	}
	return b.String()
}

// costLine is the full projection's line of figures, each as the agent reported it, or
// "not reported": a turn posted without them has none, and zeros would be figures nobody
// reported.
func costLine(s core.Snapshot) string {
	notReported := "not reported"
	iterations, duration, tokens := notReported, notReported, notReported
	if s.Reported(core.EvidenceIterations) {
		iterations = strconv.Itoa(s.Iterations)
	}
	if s.Reported(core.EvidenceDurationMs) {
		duration = strconv.FormatFloat(s.DurationMs, 'f', -1, 64) + "ms"
	}
	if s.Reported(core.EvidenceTokenUsage) {
		tokens = fmt.Sprintf("%d in, %d out", s.TokenUsage.Input, s.TokenUsage.Output)
	}
	return "Iterations: " + iterations + "; duration: " + duration + "; tokens: " + tokens
}

// lineBreaks are the sequences a reader (or a model) takes for a new line.
var lineBreaks = strings.NewReplacer("\r\n", "\n  ", "\r", "\n  ", "\n", "\n  ", "\v", "\n  ", "\f", "\n  ",
	"\u0085", "\n  ", "\u2028", "\n  ", "\u2029", "\n  ")

// indentBreaks indents every line after the first of a line built from stored text (a final
// answer, a tool's result, a decision's rule), so that stored text can never start a line of
// its own: a causal block's structure ("Past decision (…)", "- …", "Answer: …") always starts
// a line, and stored text that imitates it, such as an answer holding
// "\n\nPast decision (turn 9, score 0.99): …", stays visibly inside the line it belongs to.
func indentBreaks(l string) string {
	if !strings.ContainsAny(l, "\r\n\v\f\u0085\u2028\u2029") {
		return l
	}
	return lineBreaks.Replace(l)
}

// cutQuery puts a past query on one line and cuts it to 80 characters.
func cutQuery(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if utf8.RuneCountInString(q) <= maxPastQueryChars {
		return q
	}
	return string([]rune(q)[:maxPastQueryChars]) + "…"
}

func compactJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

func decisionLines(ds []core.Decision) []string {
	var out []string
	for _, d := range ds {
		l := "- " + d.StageID + ": " + d.Chosen
		if d.Rule != "" {
			l += " (rule: " + d.Rule + ")"
		}
		if ev := compactJSON(d.Evidence); ev != "" && ev != "null" {
			l += " evidence: " + ev
		}
		out = append(out, l)
	}
	return out
}

func toolLines(ts []core.ToolCall) []string {
	var out []string
	for _, t := range ts {
		args := compactJSON(t.Args)
		if args == "null" {
			args = ""
		}
		l := "- tool " + t.Name + "(" + args + ")"
		if t.ResultPreview != "" {
			l += " → " + t.ResultPreview
		}
		if t.Errored {
			l += " [ERROR]"
		}
		out = append(out, l)
	}
	return out
}

// narrate tells a snapshot as one paragraph.
func narrate(s core.Snapshot) string {
	var parts []string
	for _, d := range s.Decisions {
		p := fmt.Sprintf("At %s the agent chose %s", d.StageID, d.Chosen)
		if d.Rule != "" {
			p += " because " + d.Rule
		}
		parts = append(parts, p+".")
	}
	for _, t := range s.ToolCalls {
		p := "It called " + t.Name
		if args := compactJSON(t.Args); args != "" && args != "null" {
			p += " with " + args
		}
		switch {
		case t.Errored && t.ResultPreview != "":
			p += ", which failed: " + t.ResultPreview
		case t.Errored:
			p += ", which failed"
		case t.ResultPreview != "":
			p += ", which returned: " + t.ResultPreview
		}
		parts = append(parts, strings.TrimRight(p, ".")+".")
	}
	if s.FinalContent != "" {
		parts = append(parts, "It answered: "+s.FinalContent)
	}
	if len(parts) == 0 {
		return "Nothing was recorded about how it was answered."
	}
	return strings.Join(parts, " ")
}
