package turns

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// ExtractionNote reports how a memory's facts or beats were extracted on a
// turn when its strategy asked for the LLM extractor.
type ExtractionNote struct {
	MemoryID  string `json:"memoryId"`
	Extractor string `json:"extractor"` // llm, or pattern after a fallback
	// FallbackReason says why the LLM's output was not used.
	FallbackReason string `json:"fallbackReason,omitempty"`
	InputTokens    int64  `json:"inputTokens,omitempty"`
	OutputTokens   int64  `json:"outputTokens,omitempty"`
}

// factSchema and beatSchema are the JSON Schemas the model must answer with
// (strict-mode friendly: every property required, no extras).
var factSchema = map[string]any{
	"type": "object", "additionalProperties": false, "required": []string{"facts"},
	"properties": map[string]any{"facts": map[string]any{"type": "array", "maxItems": 100, "items": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"key", "value", "confidence"},
		"properties": map[string]any{
			"key":        map[string]any{"type": "string", "description": "short, stable, lower-case slug, e.g. name, location, likes:tea"},
			"value":      map[string]any{"type": "string"},
			"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		}}}},
}

var beatSchema = map[string]any{
	"type": "object", "additionalProperties": false, "required": []string{"beats"},
	"properties": map[string]any{"beats": map[string]any{"type": "array", "maxItems": 100, "items": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"role", "text", "confidence"},
		"properties": map[string]any{
			"role":       map[string]any{"type": "string", "enum": []string{"user", "assistant"}},
			"text":       map[string]any{"type": "string"},
			"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		}}}},
}

const extractFactsPrompt = "Extract durable facts about the user from this conversation turn (name, preferences, " +
	"circumstances, commitments). Answer with JSON only, matching the schema. Use short lower-case slugs as keys. " +
	"Give each fact a confidence from 0 to 1. No facts: an empty list."

const extractBeatsPrompt = "Extract the narrative beats of this conversation turn: what the user asked or did, and what the " +
	"assistant answered or decided, one short sentence each. Answer with JSON only, matching the schema, with a " +
	"confidence from 0 to 1 for each beat."

// llmExtract asks side's model for facts (semantic) or beats (narrative)
// from one turn. Output that fails validation is rejected with a reason and
// the pattern extractor is used instead; so is a failed call.
func (s *Service) llmExtract(ctx context.Context, side writeSide, messages []core.Message) ([]core.Fact, []core.Beat, ExtractionNote) {
	note := ExtractionNote{MemoryID: side.mem.ID, Extractor: "llm"}
	ex, _ := side.mem.Strategy.Find(core.Extract)
	fallback := func(reason string) ([]core.Fact, []core.Beat, ExtractionNote) {
		note.Extractor, note.FallbackReason = "pattern", reason
		return ExtractFacts(messages, 0, 100), ExtractBeats(messages, 0, 100), note
	}
	llm, ok := s.llms[ex.Str("llm")]
	if !ok {
		return fallback(fmt.Sprintf("the LLM provider %q is not configured on this server", ex.Str("llm")))
	}
	var transcript strings.Builder
	for _, m := range messages {
		if m.Role == "user" || m.Role == "assistant" {
			fmt.Fprintf(&transcript, "%s: %s\n", m.Role, m.Content)
		}
	}
	prompt, schema := extractFactsPrompt, factSchema
	if side.beats {
		prompt, schema = extractBeatsPrompt, beatSchema
	}
	res, err := llm.Complete(ctx, core.ChatRequest{Model: ex.Str("model"), JSONSchema: schema, MaxTokens: 1024,
		Messages: []core.Message{{Role: "system", Content: prompt}, {Role: "user", Content: transcript.String()}}})
	if err != nil {
		return fallback("the model call failed (" + core.SafeReason(err) + ")")
	}
	note.InputTokens, note.OutputTokens = res.InputTokens, res.OutputTokens
	if side.beats {
		beats, reason := parseBeats(res.Content)
		if reason != "" {
			return fallback("the model's output was rejected: " + reason)
		}
		return nil, beats, note
	}
	facts, reason := parseFacts(res.Content)
	if reason != "" {
		return fallback("the model's output was rejected: " + reason)
	}
	return facts, nil, note
}

// parseFacts validates the model's answer against factSchema by hand (the
// provider may not enforce it), returning a reason when it does not hold.
func parseFacts(content string) ([]core.Fact, string) {
	var out struct {
		Facts []struct {
			Key        *string  `json:"key"`
			Value      *string  `json:"value"`
			Confidence *float64 `json:"confidence"`
		} `json:"facts"`
	}
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(content)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil || out.Facts == nil {
		return nil, "not a JSON object with a `facts` array"
	}
	var facts []core.Fact
	for i, f := range out.Facts {
		if f.Key == nil || f.Value == nil || f.Confidence == nil {
			return nil, fmt.Sprintf("facts[%d] lacks key, value or confidence", i)
		}
		key := slugKey(*f.Key)
		if key == "" || strings.TrimSpace(*f.Value) == "" || *f.Confidence < 0 || *f.Confidence > 1 || core.CheckText(*f.Value) != "" {
			return nil, fmt.Sprintf("facts[%d] has an empty key or value, a confidence outside 0..1, or invalid text", i)
		}
		facts = append(facts, core.Fact{Key: key, Value: core.Truncate(strings.TrimSpace(*f.Value), 500), Confidence: *f.Confidence})
	}
	return facts, ""
}

func parseBeats(content string) ([]core.Beat, string) {
	var out struct {
		Beats []struct {
			Role       *string  `json:"role"`
			Text       *string  `json:"text"`
			Confidence *float64 `json:"confidence"`
		} `json:"beats"`
	}
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(content)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil || out.Beats == nil {
		return nil, "not a JSON object with a `beats` array"
	}
	var beats []core.Beat
	for i, b := range out.Beats {
		if b.Role == nil || b.Text == nil || b.Confidence == nil || (*b.Role != "user" && *b.Role != "assistant") ||
			strings.TrimSpace(*b.Text) == "" || *b.Confidence < 0 || *b.Confidence > 1 || core.CheckText(*b.Text) != "" {
			return nil, fmt.Sprintf("beats[%d] does not match the schema", i)
		}
		beats = append(beats, core.Beat{Role: *b.Role, Text: core.Truncate(strings.TrimSpace(*b.Text), 300), Confidence: *b.Confidence})
	}
	return beats, ""
}

// slugKey keeps a model-given key within the fact:{key} id rules: slug
// parts joined by ':', at most three parts.
func slugKey(k string) string {
	parts := strings.SplitN(k, ":", 3)
	for i, p := range parts {
		parts[i] = slug(p)
		if parts[i] == "" {
			return ""
		}
	}
	return strings.Join(parts, ":")
}
