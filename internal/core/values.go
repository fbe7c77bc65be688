package core

import (
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The values entries hold, as stored (JSON) and as read back: a turn's
// messages, a causal snapshot, a fact, a beat.

// Message is one message of a turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Decision is one decision the agent recorded during the turn.
type Decision struct {
	StageID  string          `json:"stageId"`
	Chosen   string          `json:"chosen"`
	Rule     string          `json:"rule,omitempty"`
	Evidence json.RawMessage `json:"evidence,omitempty"`
}

// ToolCall is one tool call the agent made during the turn.
type ToolCall struct {
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args,omitempty"`
	ResultPreview string          `json:"resultPreview,omitempty"`
	Errored       bool            `json:"errored"`
}

// TokenUsage counts the turn's model tokens.
type TokenUsage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
}

// Snapshot is the value of a causal memory's snap-{turn} entry: the turn's
// question and answer and the evidence behind the answer.
//
// The evidence fields hold what the agent REPORTED. Unreported names the
// fields it did not report (a turn posted without `evidence`, or with only
// some of it): their zero values here stand for nothing, and the stored
// value leaves them out (MarshalJSON), so that no reader — the entries API,
// an explanation, a recalled causal block — shows figures nobody reported.
// A snapshot stored before this rule has no Unreported list: its fields
// read as reported, as they always did.
type Snapshot struct {
	Query        string     `json:"query"`
	FinalContent string     `json:"finalContent"`
	Iterations   int        `json:"iterations"`
	Decisions    []Decision `json:"decisions"`
	ToolCalls    []ToolCall `json:"toolCalls"`
	DurationMs   float64    `json:"durationMs"`
	TokenUsage   TokenUsage `json:"tokenUsage"`
	Unreported   []string   `json:"unreported,omitempty"`
}

// The evidence fields of a Snapshot, as Unreported names them.
const (
	EvidenceIterations = "iterations"
	EvidenceDecisions  = "decisions"
	EvidenceToolCalls  = "toolCalls"
	EvidenceDurationMs = "durationMs"
	EvidenceTokenUsage = "tokenUsage"
)

// EvidenceFields are the evidence fields of a Snapshot, in their order.
var EvidenceFields = []string{EvidenceIterations, EvidenceDecisions, EvidenceToolCalls, EvidenceDurationMs, EvidenceTokenUsage}

// Reported reports whether the agent reported the evidence field.
func (s Snapshot) Reported(field string) bool {
	for _, f := range s.Unreported {
		if f == field {
			return false
		}
	}
	return true
}

// MarshalJSON writes the snapshot with its unreported evidence fields left
// out, and the Unreported list when there is one.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	type stored struct {
		Query        string      `json:"query"`
		FinalContent string      `json:"finalContent"`
		Iterations   *int        `json:"iterations,omitempty"`
		Decisions    *[]Decision `json:"decisions,omitempty"`
		ToolCalls    *[]ToolCall `json:"toolCalls,omitempty"`
		DurationMs   *float64    `json:"durationMs,omitempty"`
		TokenUsage   *TokenUsage `json:"tokenUsage,omitempty"`
		Unreported   []string    `json:"unreported,omitempty"`
	}
	out := stored{Query: s.Query, FinalContent: s.FinalContent, Unreported: s.Unreported}
	if s.Reported(EvidenceIterations) {
		out.Iterations = &s.Iterations
	}
	if s.Reported(EvidenceDecisions) {
		if s.Decisions == nil {
			s.Decisions = []Decision{}
		}
		out.Decisions = &s.Decisions
	}
	if s.Reported(EvidenceToolCalls) {
		if s.ToolCalls == nil {
			s.ToolCalls = []ToolCall{}
		}
		out.ToolCalls = &s.ToolCalls
	}
	if s.Reported(EvidenceDurationMs) {
		out.DurationMs = &s.DurationMs
	}
	if s.Reported(EvidenceTokenUsage) {
		out.TokenUsage = &s.TokenUsage
	}
	return json.Marshal(out)
}

// Fact is one extracted fact: Key is stable across turns so a later turn
// that restates it replaces it (fact:{key} is upserted).
type Fact struct {
	Key        string  `json:"key"`
	Value      string  `json:"value"`
	Text       string  `json:"text"` // the sentence it came from
	Confidence float64 `json:"confidence"`
}

// Beat is one narrative beat: what happened in a turn, in one sentence.
type Beat struct {
	Role       string  `json:"role"`
	Text       string  `json:"text"`
	Confidence float64 `json:"confidence"`
}

// DecodeValue decodes a stored entry value (a message, fact, beat, snapshot or document chunk)
// with encoding/json's semantics — names matched case-insensitively, the last of repeated names
// kept, invalid UTF-8 replaced — but not its cost: encoding/json scans the whole input once to
// validate it before decoding it in a second pass. A recall decodes every candidate's value,
// 20–30 of them; a 900-byte document chunk took 6.4 µs with encoding/json and 1.8 µs here
// (go test -bench on this machine).
func DecodeValue(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, jsonv1.DefaultOptionsV1())
}
