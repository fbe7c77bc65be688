package turns

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/footprint/footprint/internal/core"
)

// The read side of conversations, for frontends: which conversations a
// tenant holds, their turns, and one turn with what is stored and linked
// for it. Everything here is read from what was stored and linked; nothing
// is inferred.

// ConversationQuery selects a page of a tenant's conversations for a store:
// the namespaces that start with Prefix, after After in byte order, where
// MemoryID ("" = any memory) holds entries.
type ConversationQuery struct {
	Tenant   string
	Prefix   string
	MemoryID string
	// After is the last namespace of the previous page ("" = the first page).
	After string
	// Limit is how many namespaces to examine, at most.
	Limit int
	Now   time.Time
}

// ConversationRecord is what a store holds for one namespace: its live
// entries, counted per memory.
type ConversationRecord struct {
	Namespace string
	// Memories are the live entry counts per memory, by memory id; empty
	// when every entry of the namespace has expired.
	Memories []MemoryCount
	// LastTurn is the highest turn a live entry carries (0: none).
	LastTurn int
	// CreatedAt is the oldest live entry's creation, UpdatedAt the newest
	// change of one.
	CreatedAt, UpdatedAt time.Time
}

// MemoryCount is how many live entries one memory holds in a namespace.
type MemoryCount struct {
	MemoryID string
	Entries  int64
}

// TurnQuery selects turns of one namespace for a store: the given Turns, or
// else up to Limit turns below Before (0: no bound), newest first.
type TurnQuery struct {
	Tenant    string
	Namespace string
	Turns     []int
	Before    int
	Limit     int
	Now       time.Time
}

// TurnRecord is what a store holds for one turn of a namespace.
type TurnRecord struct {
	Turn int
	// Entries are the live entries that carry the turn (msg-{turn}-*,
	// snap-{turn}, beat-{turn}-*) and the live facts it last wrote
	// (SourceTurn), without embeddings, by memory id, then kind, then index.
	Entries []core.Entry
	// LinkedRunIDs and LinkedRecallIDs are the links the turn was posted with.
	LinkedRunIDs, LinkedRecallIDs []string
	// RecallIDs are the receipts recorded for the turn, oldest first, and
	// RecallRunIDs the runs those receipts name.
	RecallIDs, RecallRunIDs []string
	// RunIDs are the runs opened for the turn, oldest first.
	RunIDs []string
}

// Exists reports whether anything is stored or linked for the turn.
func (r TurnRecord) Exists() bool {
	return len(r.Entries)+len(r.LinkedRunIDs)+len(r.LinkedRecallIDs)+len(r.RecallIDs)+len(r.RunIDs) > 0
}

// Conversation is one conversation as a list shows it.
type Conversation struct {
	Identity core.Identity
	Memories []MemoryCount
	// Entries is the sum of Memories.
	Entries              int64
	LastTurn             int
	CreatedAt, UpdatedAt time.Time
}

// Turn is one turn of a conversation with what is stored and linked for it.
type Turn struct {
	Identity  core.Identity
	Number    int
	CreatedAt time.Time // zero when no entry of the turn is stored
	// MessagesMemoryID is the memory Messages were read from: the first,
	// by id, that holds messages of the turn.
	MessagesMemoryID string
	Messages         []core.Message
	Snapshot         *SnapshotSummary
	Entries          []MemoryEntryIDs
	// RunIDs and RecallIDs are every run and receipt linked to the turn.
	RunIDs, RecallIDs []string
}

// MemoryEntryIDs are the entries one memory holds for a turn.
type MemoryEntryIDs struct {
	MemoryID string
	IDs      []string
}

// SnapshotSummary is what a turn's causal snapshot says, in brief. The
// optional figures are nil when the agent did not report them.
type SnapshotSummary struct {
	MemoryID, EntryID   string
	Query, FinalContent string
	// Reported is false when the snapshot holds no evidence at all.
	Reported         bool
	Iterations       *int
	Decisions        int
	ToolCalls        int
	ErroredToolCalls int
	DurationMs       *float64
	TokenUsage       *core.TokenUsage
}

// PreviewChars is how many characters of a message a list of turns shows.
const PreviewChars = 280

// Preview returns the start of content a list shows (at most PreviewChars
// characters), its whole length in characters and whether it was cut.
func Preview(content string) (string, int, bool) {
	n := utf8.RuneCountInString(content)
	if n <= PreviewChars {
		return content, n, false
	}
	i, count := 0, 0
	for i = range content {
		if count == PreviewChars {
			break
		}
		count++
	}
	return content[:i], n, true
}

// ConversationsParams selects a page of a tenant's conversations.
type ConversationsParams struct {
	Tenant string
	// Principal keeps one end user's conversations ("" = every principal's).
	Principal string
	// MemoryID keeps the conversations where that memory holds entries.
	MemoryID string
	After    string
	Limit    int
}

// ListConversations returns a page of the tenant's conversations that hold
// live entries, by namespace (principal, then conversation id), and the
// position after it ("" when there are no more). Namespaces of a
// principal's own memory (no conversation) are not conversations and are
// left out.
func (s *Service) ListConversations(ctx context.Context, p ConversationsParams) ([]Conversation, string, error) {
	prefix := core.Identity{Tenant: p.Tenant}.TenantPrefix()
	if p.Principal != "" {
		prefix = core.Identity{Tenant: p.Tenant, Principal: p.Principal}.PrincipalPrefix()
	}
	recs, next, err := s.store.ListConversations(ctx, ConversationQuery{Tenant: p.Tenant, Prefix: prefix, MemoryID: p.MemoryID,
		After: p.After, Limit: max(p.Limit, 1), Now: s.now().UTC()})
	if err != nil {
		return nil, "", err
	}
	out := make([]Conversation, 0, len(recs))
	for _, r := range recs {
		id, ok := core.ParseNamespace(r.Namespace)
		if !ok || id.ConversationID == "" || id.Tenant != p.Tenant || len(r.Memories) == 0 {
			continue
		}
		c := Conversation{Identity: id, Memories: r.Memories, LastTurn: r.LastTurn, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		for _, m := range r.Memories {
			c.Entries += m.Entries
		}
		out = append(out, c)
	}
	return out, next, nil
}

// ListTurns returns up to limit turns of the conversation below before (0:
// from the newest), newest first, and the turn to pass as before for the
// next page (0 when there are no more).
func (s *Service) ListTurns(ctx context.Context, id core.Identity, before, limit int) ([]Turn, int, error) {
	limit = max(limit, 1)
	recs, err := s.store.ListTurns(ctx, TurnQuery{Tenant: id.Tenant, Namespace: id.Namespace(), Before: before, Limit: limit + 1, Now: s.now().UTC()})
	if err != nil {
		return nil, 0, err
	}
	next := 0
	if len(recs) > limit {
		recs = recs[:limit]
		next = recs[limit-1].Turn
	}
	out := make([]Turn, 0, len(recs))
	for _, r := range recs {
		out = append(out, assembleTurn(id, r))
	}
	return out, next, nil
}

// GetTurn returns one turn of the conversation; ErrNotFound when nothing is
// stored or linked for it.
func (s *Service) GetTurn(ctx context.Context, id core.Identity, turn int) (Turn, error) {
	if turn < 1 {
		return Turn{}, &core.NotFoundError{What: "turn", ID: fmt.Sprint(turn)}
	}
	recs, err := s.store.ListTurns(ctx, TurnQuery{Tenant: id.Tenant, Namespace: id.Namespace(), Turns: []int{turn}, Now: s.now().UTC()})
	if err != nil {
		return Turn{}, err
	}
	if len(recs) == 0 || recs[0].Turn != turn || !recs[0].Exists() {
		return Turn{}, &core.NotFoundError{What: "turn", ID: fmt.Sprint(turn)}
	}
	return assembleTurn(id, recs[0]), nil
}

// assembleTurn reads a turn's records: its messages from the first memory
// that holds them, its snapshot from the first causal one, its entries by
// memory and every explicit link.
func assembleTurn(id core.Identity, r TurnRecord) Turn {
	t := Turn{Identity: id, Number: r.Turn, Messages: []core.Message{}, Entries: []MemoryEntryIDs{}, RunIDs: []string{}, RecallIDs: []string{}}
	entries := slices.Clone(r.Entries)
	slices.SortStableFunc(entries, func(a, b core.Entry) int {
		if c := cmp.Compare(a.MemoryID, b.MemoryID); c != 0 {
			return c
		}
		// The turn's own entries by index, then the facts it last wrote, by id.
		if fa, fb := a.Kind == core.KindFact, b.Kind == core.KindFact; fa != fb {
			return cmp.Compare(boolRank(fa), boolRank(fb))
		}
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	for _, e := range entries {
		if e.Kind != core.KindFact && (t.CreatedAt.IsZero() || e.CreatedAt.Before(t.CreatedAt)) {
			t.CreatedAt = e.CreatedAt
		}
		if n := len(t.Entries); n == 0 || t.Entries[n-1].MemoryID != e.MemoryID {
			t.Entries = append(t.Entries, MemoryEntryIDs{MemoryID: e.MemoryID})
		}
		t.Entries[len(t.Entries)-1].IDs = append(t.Entries[len(t.Entries)-1].IDs, e.ID)
		switch e.Kind {
		case core.KindMessage:
			if t.MessagesMemoryID == "" {
				t.MessagesMemoryID = e.MemoryID
			}
			if t.MessagesMemoryID == e.MemoryID {
				var m core.Message
				if core.DecodeValue(e.Value, &m) == nil {
					t.Messages = append(t.Messages, m)
				}
			}
		case core.KindSnapshot:
			if t.Snapshot == nil {
				t.Snapshot = summarizeSnapshot(e)
			}
		}
		if e.SourceRunID != "" && e.Kind != core.KindFact {
			t.RunIDs = appendNew(t.RunIDs, e.SourceRunID)
		}
	}
	if t.CreatedAt.IsZero() {
		for _, e := range entries {
			if t.CreatedAt.IsZero() || e.CreatedAt.Before(t.CreatedAt) {
				t.CreatedAt = e.CreatedAt
			}
		}
	}
	for _, ids := range [][]string{r.LinkedRunIDs, r.RecallRunIDs, r.RunIDs} {
		for _, x := range ids {
			t.RunIDs = appendNew(t.RunIDs, x)
		}
	}
	for _, ids := range [][]string{r.RecallIDs, r.LinkedRecallIDs} {
		for _, x := range ids {
			t.RecallIDs = appendNew(t.RecallIDs, x)
		}
	}
	return t
}

// summarizeSnapshot reads a snap-{turn} entry. A figure of zero is one the
// agent did not report (a turn takes at least one iteration, some time and
// some tokens), so it is left out rather than shown as measured.
func summarizeSnapshot(e core.Entry) *SnapshotSummary {
	var snap core.Snapshot
	if core.DecodeValue(e.Value, &snap) != nil {
		return nil
	}
	s := &SnapshotSummary{MemoryID: e.MemoryID, EntryID: e.ID, Query: snap.Query, FinalContent: snap.FinalContent,
		Decisions: len(snap.Decisions), ToolCalls: len(snap.ToolCalls)}
	for _, c := range snap.ToolCalls {
		if c.Errored {
			s.ErroredToolCalls++
		}
	}
	if snap.Iterations > 0 {
		s.Iterations = &snap.Iterations
	}
	if snap.DurationMs > 0 {
		s.DurationMs = &snap.DurationMs
	}
	if snap.TokenUsage.Input > 0 || snap.TokenUsage.Output > 0 {
		tu := snap.TokenUsage
		s.TokenUsage = &tu
	}
	s.Reported = s.Decisions > 0 || s.ToolCalls > 0 || s.Iterations != nil || s.DurationMs != nil || s.TokenUsage != nil
	return s
}

func appendNew(xs []string, x string) []string {
	if x == "" || slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
