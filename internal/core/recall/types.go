package recall

import (
	"context"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// RecallParams is one recall request: the read side of every readable
// memory of the tenant (or of those named), for one conversation.
type RecallParams struct {
	Identity core.Identity
	// Query is the text recall is for; when empty, the last user message
	// with content in Messages.
	Query                  string
	Messages               []core.Message
	Memories               []string
	ContextTokensRemaining *int // for budget strategies; nil: unknown
	Turn                   int  // the turn this recall is for (0: unknown); recorded, linked by explain
	RunID                  string
	// Exclude names injection ids (memory:<id>#<entryId>) to answer as if
	// those entries did not exist: an ablation rerun. Non-nil (even empty: a
	// baseline rerun) makes the recall a RERUN of Turn: it considers only
	// entries written before Turn, as the recall made for that turn did, and
	// its receipt says Rerun, so an explanation never takes it for what the
	// turn was offered.
	Exclude []string
}

// IsRerun reports whether p reruns a turn (see Exclude).
func (p RecallParams) IsRerun() bool { return p.Exclude != nil }

// RecallResult is what recall answers, and what its receipt stores (minus
// the query text: only QueryHash is kept). The recall text is held once, in
// SystemPrompt; memories, candidates and injections point into it with a
// Span (see Assemble).
type RecallResult struct {
	RecallID  string        `json:"recallId,omitempty"`
	Identity  core.Identity `json:"identity,omitempty"`
	QueryHash string        `json:"queryHash,omitempty"` // "sha256:<hex>" of the query text
	Turn      int           `json:"turn,omitempty"`
	RunID     string        `json:"runId,omitempty"`
	CreatedAt time.Time     `json:"createdAt,omitempty"`
	// Rerun is set on a recall made with `exclude`: an ablation rerun of
	// Turn, which saw only entries written before Turn. Exclude is what it
	// left out.
	Rerun        bool           `json:"rerun,omitempty"`
	Exclude      []string       `json:"exclude,omitempty"`
	Memories     []MemoryRecall `json:"memories"`
	Injections   []Injection    `json:"injections"`
	SystemPrompt string         `json:"systemPrompt,omitempty"`
}

// Span is a part of a recall's SystemPrompt: its bytes from Start up to, not
// including, End.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Text returns the part of the recall's SystemPrompt that s names, and false
// when s is nil or does not lie within it.
func (r RecallResult) Text(s *Span) (string, bool) {
	if s == nil || s.Start < 0 || s.Start > s.End || s.End > len(r.SystemPrompt) {
		return "", false
	}
	return r.SystemPrompt[s.Start:s.End], true
}

// MemoryRecall is one memory's formatted recall and its evidence.
type MemoryRecall struct {
	MemoryID string          `json:"memoryId,omitempty"`
	Type     core.MemoryType `json:"type,omitempty"`
	Strategy core.Strategy   `json:"strategy,omitempty"`
	Flavor   string          `json:"flavor,omitempty"` // "memory" or "rag"
	// Scope is "principal" for a principal-scoped memory ("" for a
	// conversation's), so that explain looks for its entries there.
	Scope core.MemoryScope `json:"scope,omitempty"`
	// SystemSpan is where the memory's system-role recall text lies in the
	// recall's SystemPrompt; nil when it contributed none.
	SystemSpan *Span    `json:"systemSpan,omitempty"`
	Evidence   Evidence `json:"evidence,omitempty"`
	// Messages is the formatted recall, in prompt order, as ReadMemory
	// writes it (every shipped formatter writes role "system"). Assemble
	// moves it into the recall's SystemPrompt and injections and clears it:
	// it is never part of an answer or a receipt.
	Messages []core.Message `json:"-"`
}

// Evidence is the record of one strategy's read: every candidate it
// considered, its score and rank, admitted or not and why.
type Evidence struct {
	Strategy  core.StrategyKind `json:"strategy,omitempty"`
	QueryHash string            `json:"queryHash,omitempty"`
	K         int               `json:"k,omitempty"`         // topK's k; 0 when not a ranking strategy
	Threshold *float64          `json:"threshold,omitempty"` // strict: a score must be > threshold
	// Ranking is how a topK read ordered its candidates (vector, lexical or hybrid) and
	// RankingSource where that came from: "memory" or "embedder default". Alpha is a hybrid's
	// vector weight.
	Ranking       core.Ranking `json:"ranking,omitempty"`
	RankingSource string       `json:"rankingSource,omitempty"`
	Alpha         *float64     `json:"alpha,omitempty"`
	// ThresholdOn names the score the threshold was compared with (each candidate's `score`,
	// which is its ranking's: vector, lexical or hybrid), and ThresholdSource the rule that set
	// it: "memory", "embedder default" or "seed default". Both absent without a threshold.
	ThresholdOn     core.Ranking `json:"thresholdOn,omitempty"`
	ThresholdSource string       `json:"thresholdSource,omitempty"`
	EmbedderID      string       `json:"embedderId,omitempty"`
	Dimensions      int          `json:"dimensions,omitempty"`
	// SearchMode is "exact" or "ann" for ranking strategies, "" otherwise.
	SearchMode         string   `json:"searchMode,omitempty"`
	ConsideredCount    int      `json:"consideredCount"`
	AdmittedCount      int      `json:"admittedCount"`
	RejectedCount      int      `json:"rejectedCount"`
	NearestMiss        *float64 `json:"nearestMiss,omitempty"` // best score that did not clear the threshold
	CandidatesComplete bool     `json:"candidatesComplete"`    // false when the candidate list was cut (e.g. rejectWindow)
	CorpusEmpty        bool     `json:"corpusEmpty"`           // nothing at all to consider
	// Decision is the budget strategy's branch: pick, skip-empty or
	// skip-no-budget ("" for other strategies).
	Decision   string      `json:"decision,omitempty"`
	Candidates []Candidate `json:"candidates"`
	// Parts holds a hybrid's parts' evidence, in strategy order.
	Parts []Evidence `json:"parts,omitempty"`
	// Fold is what the summarize strategy folded on this recall.
	Fold *FoldEvidence `json:"fold,omitempty"`
	// Excluded lists the entry ids this recall was asked to leave out.
	Excluded []string `json:"excluded,omitempty"`
	// BeforeTurn is set on a rerun of a turn: only entries written before
	// it were considered (the others are candidates with reason later-turn).
	BeforeTurn int `json:"beforeTurn,omitempty"`
	// Note explains anything unusual (e.g. an embedder mismatch).
	Note string `json:"note,omitempty"`
}

// Candidate is one entry a read side considered.
type Candidate struct {
	ID       string   `json:"id,omitempty"`
	MemoryID string   `json:"memoryId,omitempty"`
	Score    *float64 `json:"score,omitempty"` // nil for strategies that do not score
	// VectorScore and LexicalScore are the components a topK ranking computed (cosine
	// similarity; the lexical score): Score is the ranking's own, their weighted sum for a
	// hybrid.
	VectorScore  *float64 `json:"vectorScore,omitempty"`
	LexicalScore *float64 `json:"lexicalScore,omitempty"`
	Rank         int      `json:"rank"` // 1-based, by score (or by the strategy's order)
	Admitted     bool     `json:"admitted"`
	// Reason is set when not admitted: below-threshold, over-max-entries,
	// over-budget, over-char-budget, decayed, embedder-mismatch.
	Reason string `json:"reason,omitempty"`
	// PromptPosition is an admitted candidate's 0-based place in prompt
	// order. SystemSpan is where the exact text it contributed (the
	// memory's header on the first) lies in the recall's SystemPrompt:
	// admitted only, and only when the memory's fragments rebuild its text
	// byte for byte (see Assemble).
	PromptPosition *int  `json:"promptPosition,omitempty"`
	SystemSpan     *Span `json:"systemSpan,omitempty"`
	// PromptFragment is that text as ReadMemory renders it; Assemble turns
	// it into SystemSpan and clears it: it is never part of an answer or a
	// receipt.
	PromptFragment *string `json:"-"`
	// Document provenance, for corpus chunks.
	DocURI  string `json:"docUri,omitempty"`
	Page    *int   `json:"page,omitempty"`
	Heading string `json:"heading,omitempty"`
	// Turn that wrote the entry (0 when unknown), for explanations.
	Turn int `json:"turn,omitempty"`
	// ConversationID is the conversation whose turn wrote the entry, for an
	// entry of a principal-scoped memory ("" for the conversation's own).
	ConversationID string `json:"conversationId,omitempty"`
}

// Injection is one piece to put in the prompt, per admitted chunk when the
// byte-identity guard holds, else per memory. Its system text is the part
// of the recall's SystemPrompt that SystemSpan names; Messages are non-system
// messages, which only a whole-memory injection carries.
type Injection struct {
	ID          string         `json:"id,omitempty"`     // memory:<id> or memory:<id>#<entryId>
	Flavor      string         `json:"flavor,omitempty"` // "memory" or "rag"
	Description string         `json:"description,omitempty"`
	Retrieval   *Retrieval     `json:"retrieval,omitempty"`
	SystemSpan  *Span          `json:"systemSpan,omitempty"`
	Messages    []core.Message `json:"messages,omitempty"`
}

// Retrieval is an injected chunk's score, rank and the threshold it cleared.
type Retrieval struct {
	Score     float64  `json:"score"`
	Rank      int      `json:"rank"`
	Threshold *float64 `json:"threshold,omitempty"`
}

// Reasons a candidate was not admitted.
const (
	ReasonBelowThreshold   = "below-threshold"
	ReasonOverMaxEntries   = "over-max-entries"
	ReasonOverBudget       = "over-budget"
	ReasonOverCharBudget   = "over-char-budget"
	ReasonDecayed          = "decayed"
	ReasonEmbedderMismatch = "embedder-mismatch"
	ReasonExcluded         = "excluded"
	// ReasonLaterTurn: in a rerun of turn N, an entry written by turn N or a
	// later one, which the recall made for turn N could not have seen.
	ReasonLaterTurn = "later-turn"
)

// RankQuery asks a store to rank one memory's live entries in a namespace that hold vectors
// of the query's space (Model, len(Vector)), by Ranking: the cosine similarity to Vector, the
// lexical score of Terms (core.LexicalScorer, with the statistics of those entries), or
// core.Fuse of both with Alpha.
type RankQuery struct {
	Tenant    string
	Namespace string
	MemoryID  string
	Kinds     []core.EntryKind
	Vector    []float32
	Model     string
	// Ranking is core.RankVector when empty.
	Ranking core.Ranking
	// Terms are the query's distinct terms (core.QueryTerms), for lexical and hybrid rankings.
	Terms []string
	// Alpha is the vector score's weight in a hybrid ranking.
	Alpha float64
	// Limit is how many of the best-scoring entries to return.
	Limit int
	Now   time.Time
}

// Scored is an entry, the score its ranking ordered it by, and the components of that score:
// Vector (cosine similarity) for vector and hybrid rankings, Lexical for lexical and hybrid
// ones (0 where the ranking did not compute it).
type Scored struct {
	Entry   core.Entry
	Score   float64
	Vector  float64
	Lexical float64
}

// UsesVector and UsesLexical say which components a ranking computes.
func UsesVector(r core.Ranking) bool  { return r != core.RankLexical }
func UsesLexical(r core.Ranking) bool { return r == core.RankLexical || r == core.RankHybrid }

// RankResult is a store's ranking: the best Limit entries, best first, and
// what could not be compared.
type RankResult struct {
	// Ranked are the best entries, best first (equal scores newest first).
	// Each carries what a recall reads of it: Tenant, Namespace, MemoryID,
	// ID, Kind, Turn, Index, Value, UpdatedAt, SourceTurn and EmbeddingModel;
	// a store may leave the other fields (metadata, counters, the other
	// timestamps, the vector) unset.
	Ranked []Scored
	// Total is how many live entries of the memory (with vectors of the
	// query's space) exist; -1 when not counted (an ANN search over a large
	// corpus, whose candidate list is never complete).
	Total int
	// Mismatched are live entries whose vectors are of another model or
	// dimensions: never scored, reported in the evidence.
	Mismatched []core.Entry
	// Stored is the memory's vector space (model and dimensions) when it is
	// not the query's: what the Mismatched entries hold.
	Stored *core.Fingerprint
	// Mode is "exact" (every candidate scored) or "ann" (an index).
	Mode string
}

// Store is what the read side needs from a store.
type Store interface {
	// ListEntries returns up to q.Limit live entries, newest first, and the
	// position after the last one ("" when there are no more).
	ListEntries(ctx context.Context, q core.EntryQuery) ([]core.Entry, string, error)
	// PutEntries inserts entries outside a turn (summaries); an entry whose
	// id is already stored and live is left as it is.
	PutEntries(ctx context.Context, entries []core.Entry) error
	// RankEntries ranks by q.Ranking (see RankQuery); equal scores go newest first.
	RankEntries(ctx context.Context, q RankQuery) (RankResult, error)
	// SaveRecall stores a recall receipt; GetRecall reads it back
	// (ErrNotFound for another tenant's or an unknown id).
	SaveRecall(ctx context.Context, tenant string, r RecallResult) error
	GetRecall(ctx context.Context, tenant, id string) (RecallResult, error)
	// PutDocuments replaces the chunks of docIDs in a corpus memory with
	// chunks (ids `<docId>#<n>`), in one transaction. With once, it is
	// idempotent (see core.Once): a replay writes nothing and sets
	// once.Replay; a key used by another request is core.ErrKeyReused.
	PutDocuments(ctx context.Context, tenant, memoryID string, docIDs []string, chunks []core.Entry, once *core.Once) error
	// ReceiptStore lists receipts (receipts.go).
	ReceiptStore
}
