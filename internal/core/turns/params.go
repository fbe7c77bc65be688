package turns

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/footprint/footprint/internal/core"
)

// TurnEvidence is what the agent observed while producing the turn. A field
// the agent did not send is nil: not reported, which is not zero.
type TurnEvidence struct {
	Iterations *int             `json:"iterations,omitempty"`
	Decisions  []core.Decision  `json:"decisions,omitempty"`
	ToolCalls  []core.ToolCall  `json:"toolCalls,omitempty"`
	DurationMs *float64         `json:"durationMs,omitempty"`
	TokenUsage *core.TokenUsage `json:"tokenUsage,omitempty"`
}

// Unreported names the evidence fields of e that were not reported (every
// one when e is nil), in core.EvidenceFields order.
func (e *TurnEvidence) Unreported() []string {
	if e == nil {
		return append([]string(nil), core.EvidenceFields...)
	}
	var out []string
	for _, f := range []struct {
		name     string
		reported bool
	}{
		{core.EvidenceIterations, e.Iterations != nil}, {core.EvidenceDecisions, e.Decisions != nil},
		{core.EvidenceToolCalls, e.ToolCalls != nil}, {core.EvidenceDurationMs, e.DurationMs != nil},
		{core.EvidenceTokenUsage, e.TokenUsage != nil},
	} {
		if !f.reported {
			out = append(out, f.name)
		}
	}
	return out
}

// ClientEmbeddings are vectors the client computed itself, labelled with
// the model that produced them. They replace the server's embedder for the
// turn.
type ClientEmbeddings struct {
	Model    string      `json:"embeddingModel"`
	Query    []float32   `json:"query,omitempty"`
	Messages [][]float32 `json:"messages,omitempty"`
}

// TurnParams is one POSTed turn.
type TurnParams struct {
	Identity   core.Identity     `json:"identity"`
	TurnNumber *float64          `json:"turnNumber,omitempty"`
	Messages   []core.Message    `json:"messages"`
	Evidence   *TurnEvidence     `json:"evidence,omitempty"`
	RunID      string            `json:"runId,omitempty"`
	Memories   []string          `json:"memories,omitempty"`
	Embeddings *ClientEmbeddings `json:"embeddings,omitempty"`
	// RecallIDs links the recall receipts this turn's answer was produced
	// with (explain reads them).
	RecallIDs []string `json:"recallIds,omitempty"`
	// IdempotencyKey, when set, makes a retry with the same key and the same
	// params replay the first result. Not part of the request hash.
	IdempotencyKey string `json:"-"`
}

// TurnResult says what a turn wrote.
type TurnResult struct {
	Turn    int            `json:"turn,omitempty"`
	Written []WrittenIDs   `json:"written"`
	Skipped []SkippedWrite `json:"skipped"`
	Noop    *TurnNoop      `json:"noop,omitempty"`
	// Extraction reports each LLM-extracting memory's outcome.
	Extraction []ExtractionNote `json:"extraction,omitempty"`
	// Replayed is true when the result was replayed for an idempotency key.
	Replayed bool `json:"-"`
}

// WrittenIDs lists the entry ids one memory got.
type WrittenIDs struct {
	MemoryID string   `json:"memoryId"`
	IDs      []string `json:"ids"`
}

// SkippedWrite says why a memory was not written.
type SkippedWrite struct {
	MemoryID string `json:"memoryId"`
	Reason   string `json:"reason"` // read-only, corpus, not-named, nothing-to-write
	Detail   string `json:"detail,omitempty"`
}

// TurnNoop explains a turn that wrote nothing and consumed no turn number.
type TurnNoop struct {
	Reason string `json:"reason"` // no-messages, no-user-message
	Detail string `json:"detail"`
}

// Limits on a turn, documented in the API spec.
const (
	MaxMessages     = 500
	MaxContentChars = 100_000
	MaxVectorDims   = 8192
	maxTurnNumber   = math.MaxInt32 - 1 // the highest host turn; the stored turn may be one more
	maxStoredTurn   = math.MaxInt32     // turns are 32-bit in storage (the pg turn column)
)

var roles = []string{"user", "assistant", "system", "tool"}

// NormalizeHostTurn maps the caller's turn number to the host turn:
// missing, non-finite or below 1 counts as 1; fractions round down.
func NormalizeHostTurn(n *float64) int {
	if n == nil || math.IsNaN(*n) || math.IsInf(*n, 0) || *n < 1 {
		return 1
	}
	if *n > maxTurnNumber {
		return maxTurnNumber
	}
	return int(math.Floor(*n))
}

func turnRefusal(path, code, detail string, fix any) *core.ValidationError {
	return &core.ValidationError{Code: code, Site: "postTurn", Path: path, Detail: detail, Fix: fix}
}

// validateTurn checks what the schema cannot: text encoding, roles,
// vector sanity.
func validateTurn(p TurnParams) error {
	if len(p.Messages) > MaxMessages {
		return turnRefusal("messages", core.CodeInvalidField, fmt.Sprintf("a turn holds at most %d messages; got %d.", MaxMessages, len(p.Messages)), nil)
	}
	for i, m := range p.Messages {
		path := fmt.Sprintf("messages[%d]", i)
		if !slices.Contains(roles, m.Role) {
			return turnRefusal(path+".role", core.CodeInvalidField, fmt.Sprintf("`role` must be one of %s; got %s.", core.QuoteList(roles), core.DescribeJSON(m.Role)), "user")
		}
		if reason := core.CheckText(m.Content); reason != "" {
			return turnRefusal(path+".content", core.CodeInvalidField, "`content` "+reason+".", "Hello!")
		}
		if n := len([]rune(m.Content)); n > MaxContentChars {
			return turnRefusal(path+".content", core.CodeInvalidField, fmt.Sprintf("`content` is at most %d characters; got %d.", MaxContentChars, n), nil)
		}
	}
	if p.RunID != "" {
		if reason := core.CheckText(p.RunID); reason != "" {
			return turnRefusal("runId", core.CodeInvalidField, "`runId` "+reason+".", nil)
		}
	}
	if e := p.Evidence; e != nil {
		bad := e.Iterations != nil && *e.Iterations < 0
		if d := e.DurationMs; d != nil {
			bad = bad || *d < 0 || math.IsNaN(*d) || math.IsInf(*d, 0)
		}
		if u := e.TokenUsage; u != nil {
			bad = bad || u.Input < 0 || u.Output < 0
		}
		if bad {
			return turnRefusal("evidence", core.CodeInvalidField, "`evidence` counts (iterations, durationMs, tokenUsage) must be finite and not negative.", nil)
		}
		for i, d := range e.Decisions {
			for _, s := range []string{d.StageID, d.Chosen, d.Rule} {
				if reason := core.CheckText(s); reason != "" {
					return turnRefusal(fmt.Sprintf("evidence.decisions[%d]", i), core.CodeInvalidField, "decision text "+reason+".", nil)
				}
			}
			if reason := core.CheckJSONText(d.Evidence); reason != "" {
				return turnRefusal(fmt.Sprintf("evidence.decisions[%d].evidence", i), core.CodeInvalidField, "`evidence` "+reason+".", nil)
			}
		}
		for i, c := range e.ToolCalls {
			for _, s := range []string{c.Name, c.ResultPreview} {
				if reason := core.CheckText(s); reason != "" {
					return turnRefusal(fmt.Sprintf("evidence.toolCalls[%d]", i), core.CodeInvalidField, "tool call text "+reason+".", nil)
				}
			}
			if reason := core.CheckJSONText(c.Args); reason != "" {
				return turnRefusal(fmt.Sprintf("evidence.toolCalls[%d].args", i), core.CodeInvalidField, "`args` "+reason+".", nil)
			}
		}
	}
	if ce := p.Embeddings; ce != nil {
		if ce.Model == "" || core.CheckText(ce.Model) != "" {
			return turnRefusal("embeddings.embeddingModel", core.CodeInvalidField, "client vectors need an `embeddingModel` label naming the model that produced them.", "text-embedding-3-small")
		}
		if ce.Query != nil {
			if err := checkVector(ce.Query, "embeddings.query"); err != nil {
				return err
			}
		}
		if len(ce.Messages) > len(p.Messages) {
			return turnRefusal("embeddings.messages", core.CodeInvalidVector, fmt.Sprintf("`embeddings.messages` is index-aligned with `messages`: at most %d vectors; got %d.", len(p.Messages), len(ce.Messages)), nil)
		}
		dims := len(ce.Query)
		for i, v := range ce.Messages {
			if v == nil {
				continue
			}
			path := fmt.Sprintf("embeddings.messages[%d]", i)
			if err := checkVector(v, path); err != nil {
				return err
			}
			if dims == 0 {
				dims = len(v)
			} else if len(v) != dims {
				return turnRefusal(path, core.CodeInvalidVector, fmt.Sprintf("every client vector of a turn has the same dimensions; this one has %d, an earlier one %d.", len(v), dims), nil)
			}
		}
	}
	return nil
}

// checkVector refuses vectors no similarity can be computed from.
func checkVector(v []float32, path string) error {
	if len(v) == 0 || len(v) > MaxVectorDims {
		return turnRefusal(path, core.CodeInvalidVector, fmt.Sprintf("a vector has 1 to %d dimensions; got %d.", MaxVectorDims, len(v)), nil)
	}
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return turnRefusal(path, core.CodeInvalidVector, "a vector's components must be finite numbers.", nil)
		}
		sum += f * f
	}
	if sum == 0 || math.IsInf(sum, 0) {
		return turnRefusal(path, core.CodeInvalidVector, "a zero vector has no direction: cosine similarity is undefined for it.", nil)
	}
	return nil
}

// normalize returns v scaled to unit length (checkVector has run).
func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	n := math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// requestHash fingerprints the params an idempotency key is bound to.
func requestHash(p TurnParams) []byte {
	b, _ := json.Marshal(p) // plain data: always marshals
	sum := sha256.Sum256(b)
	return sum[:]
}

// firstWithRole returns the content of the first message with role.
func firstWithRole(ms []core.Message, role string) (string, bool) {
	for _, m := range ms {
		if m.Role == role {
			return m.Content, true
		}
	}
	return "", false
}
